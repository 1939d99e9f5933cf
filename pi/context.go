package pi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strconv"
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
	// entry's "message" value; for custom_message, branch_summary and compaction
	// entries a synthesised object (see BuildContextFrom).
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
	return appendContextEnd(b, pathSetting{c.ThinkingLevel, c.rawThinking, c.Model, -1})
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
// Pi does (its buildSessionContext; docs/ENTRIES.md, steps 1–6):
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
//   - Without a compaction every entry of the path is emitted; with one, first a
//     compactionSummary, then the path entries before the compaction starting at
//     its firstKeptEntryId (none if that id is not before it on the path), then
//     every entry after it. Emitting: message → its "message" bytes;
//     custom_message → {"role":"custom","customType","content","display",
//     "details","timestamp"}; branch_summary with a non-empty summary →
//     {"role":"branchSummary","summary","fromId","timestamp"}; other types emit
//     nothing. Fields absent from the entry are omitted (JSON.stringify drops
//     undefined), present ones keep their bytes; timestamp is the Unix
//     milliseconds of the entry's timestamp (null if it does not parse).
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
	emitPath(len(path), at, st.comp, func(m json.RawMessage) { msgs = append(msgs, m) })
	c.Messages = msgs
	return c
}

// pathSetting is what a context's path sets: the thinking level, the model, and
// the position of the last compaction on the path (-1 for none).
type pathSetting struct {
	thinkingLevel string
	rawThinking   []byte
	model         *Model
	comp          int
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
			if _, _, ok := assistantModel(e); ok {
				modelAt = k
			}
		case TypeCompaction:
			st.comp = k
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
			prov, mod, _ := assistantModel(e)
			st.model = newModel(prov, mod)
		}
	}
	return st
}

// assistantModel returns the raw "provider" and "model" of a message entry whose
// message is an assistant's, and whether it is one.
func assistantModel(e Entry) (provider, model []byte, ok bool) {
	msg := e.field(fMessage)
	if len(msg) == 0 || msg[0] != '{' {
		return nil, nil, false
	}
	var role []byte
	_ = eachField(msg, func(k string, v []byte, _ int) {
		switch k {
		case "role":
			role = v
		case "provider":
			provider = v
		case "model":
			model = v
		}
	})
	r, _ := jsonString(role)
	return provider, model, r == "assistant"
}

// emitPath passes the messages of a context to emit, in order, given its path (n
// entries, entry k given by at) and the position of its last compaction.
func emitPath(n int, at func(k int) Entry, comp int, emit func(json.RawMessage)) {
	one := func(e Entry) {
		switch e.typ {
		case TypeMessage:
			emit(e.field(fMessage))
		case TypeCustomMessage:
			emit(synth(e, `{"role":"custom"`, fCustomType, fContent, fDisplay, fDetails))
		case TypeBranchSummary:
			if s, _ := jsonString(e.field(fSummary)); s != "" {
				emit(synth(e, `{"role":"branchSummary"`, fSummary, fFromID))
			}
		}
	}
	if comp < 0 {
		for k := range n {
			one(at(k))
		}
		return
	}
	ce := at(comp)
	emit(synth(ce, `{"role":"compactionSummary"`, fSummary, fTokensBefore))
	first, _ := jsonString(ce.field(fFirstKeptEntryID))
	found := false
	for k := range comp {
		e := at(k)
		if e.id == first {
			found = true
		}
		if found {
			one(e)
		}
	}
	for k := comp + 1; k < n; k++ {
		one(at(k))
	}
}

// WriteContextPath writes to w, followed by "\n", the JSON of the context whose
// path (root first) is n entries, entry k given by at: what BuildContext returns
// for that path, as Context.JSON writes it. It holds no entry and no message
// beyond the one being written, and reads each entry twice, so at may parse it
// on demand: a context of a million messages is streamed.
func WriteContextPath(w io.Writer, n int, at func(k int) Entry) error {
	st := pathSettings(n, at)
	bw := bufio.NewWriterSize(w, 1<<16)
	bw.WriteString(`{"messages":[`)
	first := true
	var b []byte
	emitPath(n, at, st.comp, func(m json.RawMessage) {
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

var fieldJSONName = [nFields]string{
	fCustomType: "customType", fContent: "content", fDisplay: "display", fDetails: "details",
	fSummary: "summary", fFromID: "fromId", fTokensBefore: "tokensBefore",
}

// synth builds a synthesised message: prefix, the given fields when present, and
// the timestamp in Unix milliseconds.
func synth(e Entry, prefix string, fields ...field) json.RawMessage {
	b := make([]byte, 0, 64+len(e.raw))
	b = append(b, prefix...)
	for _, f := range fields {
		if v := e.field(f); v != nil {
			b = append(b, ',', '"')
			b = append(b, fieldJSONName[f]...)
			b = append(b, '"', ':')
			b = append(b, v...)
		}
	}
	b = append(b, `,"timestamp":`...)
	if ms, ok := jsDateMillis(e.field(fTimestamp)); ok {
		b = strconv.AppendInt(b, ms, 10)
	} else {
		b = append(b, "null"...)
	}
	return append(b, '}')
}
