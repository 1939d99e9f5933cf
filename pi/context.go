package pi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
)

// Model is the model a context runs on; it marshals as {"provider":..,"modelId":..}.
type Model struct {
	Provider string `json:"provider"`
	ModelID  string `json:"modelId"`
	// rawProvider and rawModelID keep a value that is not a JSON string, which Pi
	// passes through (see rawUnlessString).
	rawProvider, rawModelID []byte
}

// rawUnlessString returns nil when v is a JSON string (its text is used), an
// empty slice when v is absent (JSON.stringify leaves an undefined value's key
// out), and v itself otherwise (null, a number, an object: written as is). Pi
// copies a setting from its entry without looking at it, so a file that is not
// Pi's own gives these; Pi's files always hold strings.
func rawUnlessString(v []byte) (string, []byte) {
	if s, ok := jsonString(v); ok {
		return s, nil
	}
	if v == nil {
		return "", []byte{}
	}
	return "", bytes.Clone(v) // v may lie in a buffer its reader reuses
}

// appendSetting appends `"key":value`, after sep when sep is not 0, for a
// setting read by rawUnlessString; nothing for an absent one. It reports whether
// it appended.
func appendSetting(b []byte, sep byte, key, s string, raw []byte) ([]byte, bool) {
	if raw != nil && len(raw) == 0 {
		return b, false
	}
	if sep != 0 {
		b = append(b, sep)
	}
	b = append(append(append(b, '"'), key...), '"', ':')
	if raw != nil {
		return append(b, raw...), true
	}
	return AppendString(b, s), true
}

// Context is what the model sees at a leaf, as Pi's buildSessionContext returns it.
// It marshals as {"messages":[...],"thinkingLevel":"...","model":{...}|null}.
type Context struct {
	// Messages are the agent messages: for message entries the exact bytes of the
	// entry's "message" value (unless its content was lacking or edited); for
	// custom_message, branch_summary and compaction entries a synthesised object,
	// and a compaction's recorded system message (see BuildContextFrom).
	Messages []json.RawMessage
	// ThinkingLevel is the last thinking_level_change on the path ("off" if none).
	ThinkingLevel string
	// Model is set by the last model_change or assistant message on the path.
	Model *Model
	// rawThinking keeps a thinking level that is not a JSON string (see
	// rawUnlessString).
	rawThinking []byte
}

// MarshalJSON implements json.Marshaler (encoding/json then compacts the bytes
// and escapes HTML characters; use JSON for the exact bytes).
func (c Context) MarshalJSON() ([]byte, error) { return c.JSON(), nil }

// JSON returns the context as JSON the way JavaScript's JSON.stringify writes
// Pi's SessionContext: messages byte-for-byte, no HTML escaping.
func (c Context) JSON() []byte {
	b := []byte(`{"messages":[`)
	for i, m := range c.Messages {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendMessage(b, m)
	}
	return appendContextEnd(b, pathSetting{thinkingLevel: c.ThinkingLevel, rawThinking: c.rawThinking, model: c.Model, comp: -1})
}

// appendMessage appends one message of a context's JSON (null for nil).
func appendMessage(b []byte, m json.RawMessage) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	return append(b, m...)
}

// appendContextEnd appends what follows the messages in a context's JSON.
func appendContextEnd(b []byte, st pathSetting) []byte {
	b = append(b, ']')
	b, _ = appendSetting(b, ',', "thinkingLevel", st.thinkingLevel, st.rawThinking)
	b = append(b, `,"model":`...)
	if m := st.model; m == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '{')
		var wrote bool
		b, wrote = appendSetting(b, 0, "provider", m.Provider, m.rawProvider)
		sep := byte(0)
		if wrote {
			sep = ','
		}
		b, _ = appendSetting(b, sep, "modelId", m.ModelID, m.rawModelID)
		b = append(b, '}')
	}
	return append(b, '}')
}

// BuildContextFrom builds the context of entries (in order) at leafID exactly as
// Pi does (its buildSessionContext; docs/ENTRIES.md, steps 1–7):
//
//   - leafID nil means the active leaf: the last entry, or the target of the last
//     entry when that is a "leaf" entry (a null target gives the empty context). A
//     pointer to "" (Pi's null) gives the empty context: no messages, thinking
//     level "off", no model. An unknown id falls back to the active leaf.
//   - The path runs from the root to the leaf along parentId. "leaf" entries are
//     never on a path (a parentId naming one counts as missing, a leafID naming
//     one as unknown); a missing parent ends the walk (that entry is the root of
//     its path) and so does a cycle.
//   - Over the whole path, thinking_level_change sets the thinking level,
//     model_change and assistant messages set the model, and the last compaction
//     counts.
//   - Without a compaction every entry of the path counts; with one, first the
//     compaction, then the path entries before it starting at its
//     firstKeptEntryId (none if that id is not before it on the path), system
//     messages and older compactions left out, then every entry after it.
//   - Each entry that counts gives messages: message → its "message" bytes (a
//     system message without content gets content "", a user, assistant or
//     toolResult message []); custom_message → {"role":"custom","customType",
//     "content","display","details","timestamp"} (content [] when absent);
//     branch_summary whose summary is truthy → {"role":"branchSummary",
//     "summary","fromId","timestamp"}; the compaction the context starts from →
//     its "systemMessage" when truthy, then {"role":"compactionSummary",
//     "summary","tokensBefore","timestamp"}; other types give none. Fields
//     absent from the entry are omitted (JSON.stringify drops undefined),
//     present ones keep their bytes; timestamp is the Unix milliseconds of the
//     entry's timestamp (null if it does not parse).
//   - The latest context_edit for an entry among the entries that count
//     replaces the content of its user, assistant, toolResult and custom
//     messages, or with a null replacement removes all its messages.
//
// These are the rules of Pi 1.6 (buildSessionProjection); docs/ENTRIES.md lists
// where they differ from Pi 0.x's.
func BuildContextFrom(entries []Entry, leafID *string) Context {
	idx := NewIndex(entries)
	leaf, ok := ResolveLeaf(entries, idx, leafID)
	if !ok {
		return EmptyContext()
	}
	return BuildContext(entries, idx, leaf)
}

// BuildContextAt builds the context of entries (in order) at entry leafID; an
// unknown id, or the id of a "leaf" entry, means the active leaf (see ActiveLeaf).
func BuildContextAt(entries []Entry, leafID string) Context {
	if leafID == "" {
		return BuildContextFrom(entries, nil)
	}
	return BuildContextFrom(entries, &leafID)
}

// EmptyContext is the context at Pi's null leaf: no messages, thinking level
// "off", no model.
func EmptyContext() Context { return Context{Messages: []json.RawMessage{}, ThinkingLevel: "off"} }

// BuildContext builds the context of entries (in order, indexed by idx) at the
// entry with index leaf, by the rules of BuildContextFrom.
func BuildContext(entries []Entry, idx Index, leaf int) Context {
	path := PathTo(entries, idx, leaf)
	at := func(k int) Entry { return entries[path[k]] }
	c := EmptyContext()
	st := pathSettings(len(path), at)
	c.ThinkingLevel, c.rawThinking, c.Model = st.thinkingLevel, st.rawThinking, st.model
	msgs := make([]json.RawMessage, 0, len(path))
	emitPath(len(path), at, st, func(m json.RawMessage) { msgs = append(msgs, m) })
	c.Messages = msgs
	return c
}

// pathSetting is what a context's path sets: the thinking level, the model, and
// the position of the last compaction on the path (-1 for none); and what its
// messages need beyond being copied (see projector).
type pathSetting struct {
	thinkingLevel string
	rawThinking   []byte
	model         *Model
	comp          int
	// fix: a message on the path lacks its content (normalMessage).
	fix bool
	// system: a message on the path is a system message.
	system bool
	// edits are the context_edit entries on the path with a string targetId.
	edits []editRef
}

// newModel is the model of a model_change or an assistant message.
func newModel(provider, modelID []byte) *Model {
	m := new(Model)
	m.Provider, m.rawProvider = rawUnlessString(provider)
	m.ModelID, m.rawModelID = rawUnlessString(modelID)
	return m
}

// pathSettings reads the settings of a context from its path (n entries, root
// first, entry k given by at). It remembers where the last thinking level and
// model were set and reads those two entries again at the end, so that the
// values it keeps never point into an entry at may since have reused.
func pathSettings(n int, at func(k int) Entry) pathSetting {
	st := pathSetting{thinkingLevel: EmptyContext().ThinkingLevel, comp: -1}
	thinkingAt, modelAt := -1, -1
	for k := range n {
		e := at(k)
		switch e.typ {
		case TypeThinkingLevelChange:
			thinkingAt = k
		case TypeModelChange:
			modelAt = k
		case TypeMessage:
			f := scanMessage(e.field(fMessage))
			if string(f.role) == "assistant" {
				modelAt = k
			}
			st.system = st.system || string(f.role) == "system"
			st.fix = st.fix || f.lacksContent()
		case TypeCompaction:
			st.comp = k
		case TypeContextEdit:
			if ed, ok := ContextEditOf(e); ok {
				st.edits = append(st.edits, editRef{k, ed.Target})
			}
		}
	}
	if thinkingAt >= 0 {
		st.thinkingLevel, st.rawThinking = rawUnlessString(at(thinkingAt).field(fThinkingLevel))
	}
	if modelAt >= 0 {
		e := at(modelAt)
		if e.typ == TypeModelChange {
			st.model = newModel(e.field(fProvider), e.field(fModelID))
		} else {
			f := scanMessage(e.field(fMessage))
			st.model = newModel(f.provider, f.model)
		}
	}
	return st
}

// WriteContextPath writes to w, followed by "\n", the JSON of the context whose
// path (root first) is n entries, entry k given by at: what BuildContext returns
// for that path, as Context.JSON writes it. It holds no entry and no message
// beyond the one being written (and the target ids of the path's context
// edits), and reads each entry twice (three times up to a compaction, and an
// edited entry's edit once more, when the path holds context edits), so at may
// parse it on demand: a context of a million messages is streamed.
func WriteContextPath(w io.Writer, n int, at func(k int) Entry) error {
	st := pathSettings(n, at)
	bw := bufio.NewWriterSize(w, 1<<16)
	bw.WriteString(`{"messages":[`)
	first := true
	var b []byte
	emitPath(n, at, st, func(m json.RawMessage) {
		if !first {
			bw.WriteByte(',')
		}
		first = false
		b = appendMessage(b[:0], m)
		bw.Write(b)
	})
	bw.Write(appendContextEnd(b[:0], st))
	bw.WriteByte('\n')
	return bw.Flush()
}
