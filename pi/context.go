package pi

import (
	"encoding/json"
	"strconv"
	"time"
)

// Model is the model a context runs on; it marshals as {"provider":..,"modelId":..}.
type Model struct {
	Provider string `json:"provider"`
	ModelID  string `json:"modelId"`
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
		if m == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, m...)
		}
	}
	b = append(b, `],"thinkingLevel":`...)
	b = AppendString(b, c.ThinkingLevel)
	b = append(b, `,"model":`...)
	if c.Model == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"provider":`...)
		b = AppendString(b, c.Model.Provider)
		b = append(b, `,"modelId":`...)
		b = AppendString(b, c.Model.ModelID)
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
	c := EmptyContext()
	comp := -1
	for k, i := range path {
		e := entries[i]
		switch e.typ {
		case TypeThinkingLevelChange:
			c.ThinkingLevel, _ = jsonString(e.field(fThinkingLevel))
		case TypeModelChange:
			p, _ := jsonString(e.field(fProvider))
			m, _ := jsonString(e.field(fModelID))
			c.Model = &Model{p, m}
		case TypeMessage:
			msg := e.field(fMessage)
			if len(msg) > 0 && msg[0] == '{' {
				var role, prov, model []byte
				_ = eachField(msg, func(k string, v []byte, _ int) {
					switch k {
					case "role":
						role = v
					case "provider":
						prov = v
					case "model":
						model = v
					}
				})
				if r, _ := jsonString(role); r == "assistant" {
					p, _ := jsonString(prov)
					m, _ := jsonString(model)
					c.Model = &Model{p, m}
				}
			}
		case TypeCompaction:
			comp = k
		}
	}
	msgs := make([]json.RawMessage, 0, len(path))
	emit := func(e Entry) {
		switch e.typ {
		case TypeMessage:
			msgs = append(msgs, e.field(fMessage))
		case TypeCustomMessage:
			msgs = append(msgs, synth(e, `{"role":"custom"`, fCustomType, fContent, fDisplay, fDetails))
		case TypeBranchSummary:
			if s, _ := jsonString(e.field(fSummary)); s != "" {
				msgs = append(msgs, synth(e, `{"role":"branchSummary"`, fSummary, fFromID))
			}
		}
	}
	if comp < 0 {
		for _, i := range path {
			emit(entries[i])
		}
	} else {
		ce := entries[path[comp]]
		msgs = append(msgs, synth(ce, `{"role":"compactionSummary"`, fSummary, fTokensBefore))
		first, _ := jsonString(ce.field(fFirstKeptEntryID))
		found := false
		for _, i := range path[:comp] {
			if entries[i].id == first {
				found = true
			}
			if found {
				emit(entries[i])
			}
		}
		for _, i := range path[comp+1:] {
			emit(entries[i])
		}
	}
	c.Messages = msgs
	return c
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
	if ms, ok := unixMillis(e.ts); ok {
		b = strconv.AppendInt(b, ms, 10)
	} else {
		b = append(b, "null"...)
	}
	return append(b, '}')
}

// unixMillis parses an ISO-8601 timestamp as JavaScript's Date does for the forms
// Pi writes (RFC 3339 with or without fraction, or a bare date in UTC).
func unixMillis(ts string) (int64, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, ts); err == nil {
			if layout == "2006-01-02T15:04:05.999999999" {
				t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.Local)
			}
			return t.UnixMilli(), true
		}
	}
	return 0, false
}
