package pi

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/transcriptstore/transcript/internal/jsonscan"
)

// The messages of a context, by Pi 1.6's rules (docs/ENTRIES.md): which entries of
// the path count (emitPath: Pi's buildContextEntries), the messages each gives
// (projector.messages: sessionEntryToContextMessages) and what the latest context
// edit of an entry makes of them (projector.edited: projectContextEntry). A path
// without a message that lacks its content, a system message or a context edit
// costs nothing beyond the rules of Pi 0.x: its messages are copied as stored.

// editRef is a context_edit entry of a path: its position and its targetId.
type editRef struct {
	k      int
	target string
}

// emitPath passes the messages of a context to emit, in order, given its path (n
// entries, entry k given by at) and what pathSettings read from it. Without a
// compaction every entry of the path counts. With one (the last on the path, C),
// C counts first, then the entries before C from the one whose id is
// C.firstKeptEntryId (none when no entry before C has it) except system
// messages (C recorded the system message current when it was made) and older
// compactions (which give nothing), then every entry after C.
func emitPath(n int, at func(k int) Entry, st pathSetting, emit func(json.RawMessage)) {
	p := projector{at: at, fix: st.fix, emit: emit}
	if st.comp < 0 {
		p.edits = latestEdits(st.edits, 0)
		for k := range n {
			p.entry(at(k), false)
		}
		return
	}
	first, _ := jsonString(at(st.comp).field(fFirstKeptEntryID))
	if len(st.edits) > 0 {
		// Only edits among the entries that count apply: find where they start.
		start := st.comp
		for k := range st.comp {
			if at(k).id == first {
				start = k
				break
			}
		}
		p.edits = latestEdits(st.edits, start)
	}
	p.entry(at(st.comp), true)
	found := false
	for k := range st.comp {
		e := at(k)
		found = found || e.id == first
		if !found || e.typ == TypeCompaction || st.system && e.typ == TypeMessage && e.Role() == "system" {
			continue
		}
		p.entry(e, false)
	}
	for k := st.comp + 1; k < n; k++ {
		p.entry(at(k), false)
	}
}

// latestEdits maps each target id to the position of its latest edit among
// edits at or after start; nil when there is none.
func latestEdits(edits []editRef, start int) map[string]int {
	var m map[string]int
	for _, ed := range edits {
		if ed.k < start {
			continue
		}
		if m == nil {
			m = make(map[string]int)
		}
		m[ed.target] = ed.k
	}
	return m
}

// projector turns the entries of a context into its messages.
type projector struct {
	at func(k int) Entry
	// fix: a message of the path lacks its content; without one, message
	// entries give their message exactly as stored.
	fix bool
	// edits maps a target id to the path position of its latest context edit
	// among the entries that count; nil for none.
	edits map[string]int
	emit  func(json.RawMessage)
}

// entry emits the messages of entry e, as its latest edit leaves them; head
// says e is the compaction the context starts from.
func (p *projector) entry(e Entry, head bool) {
	if p.edits != nil {
		if ke, ok := p.edits[e.id]; ok {
			p.edited(e, head, ke)
			return
		}
	}
	p.messages(e, head, p.emit)
}

// messages passes the messages entry e gives to emit: a message entry its
// message (a lacking content made "" for a system message and [] for a user,
// assistant or toolResult message); a custom_message a "custom" message; a
// branch_summary with a summary a "branchSummary" message; the compaction the
// context starts from (head) the system message it recorded, when there is
// one, and a "compactionSummary" message. Other entries give none.
func (p *projector) messages(e Entry, head bool, emit func(json.RawMessage)) {
	switch e.typ {
	case TypeMessage:
		m := e.field(fMessage)
		if p.fix {
			m = normalMessage(m)
		}
		emit(m)
	case TypeCustomMessage:
		emit(synth(e, `{"role":"custom"`, fCustomType, fContent, fDisplay, fDetails))
	case TypeBranchSummary:
		if truthy(e.field(fSummary)) {
			emit(synth(e, `{"role":"branchSummary"`, fSummary, fFromID))
		}
	case TypeCompaction:
		if !head {
			return
		}
		if sm := RecordedSystemMessage(e); sm != nil {
			emit(sm)
		}
		emit(synth(e, `{"role":"compactionSummary"`, fSummary, fTokensBefore))
	}
}

// RecordedSystemMessage returns the system message a compaction entry recorded
// (its "systemMessage", when truthy), which a context that starts from it
// gives first; nil for none, or for another entry.
func RecordedSystemMessage(e Entry) json.RawMessage {
	if e.typ != TypeCompaction {
		return nil
	}
	if sm := topField(e.raw, "systemMessage"); truthy(sm) {
		return sm
	}
	return nil
}

// edited emits the messages of entry e as the context_edit at path position ke
// leaves them: none for a null replacement; otherwise each user, assistant,
// toolResult and custom message with its content replaced by the
// replacement's (a string wrapped as one text block for assistant and
// toolResult messages, a replacement without content dropping the key). An
// edit without a replacement leaves the messages as they are (Pi 1.6 fails
// with a TypeError on one that meets such a message).
func (p *projector) edited(e Entry, head bool, ke int) {
	var ms []json.RawMessage
	p.messages(e, head, func(m json.RawMessage) { ms = append(ms, bytes.Clone(m)) })
	if len(ms) == 0 {
		return
	}
	ed, _ := ContextEditOf(p.at(ke)) // e may not be read after this
	if ed.Removes() {
		return
	}
	for _, m := range ms {
		if ed.Replacement != nil {
			m = editMessage(m, ed.Content())
		}
		p.emit(m)
	}
}

// editMessage returns message m with its content replaced by content (nil:
// the key dropped), when m is a user, assistant, toolResult or custom message;
// a string becomes one text block for an assistant or toolResult message.
func editMessage(m json.RawMessage, content []byte) json.RawMessage {
	switch string(scanMessage(m).role) {
	case "user", "custom":
	case "assistant", "toolResult":
		if len(content) > 0 && content[0] == '"' {
			content = append(append([]byte(`[{"type":"text","text":`), content...), `}]`...)
		}
	default:
		return m
	}
	o, err := SplitObject(m)
	if err != nil {
		return m
	}
	if content == nil {
		return o.Del("content").Marshal()
	}
	return o.Set("content", content).Marshal()
}

// normalMessage returns message m, or when it lacks its content (absent or
// null) a copy with content "" for a system message and [] for a user,
// assistant or toolResult message: the key keeps its place, or is added last.
func normalMessage(m json.RawMessage) json.RawMessage {
	f := scanMessage(m)
	if !f.lacksContent() {
		return m
	}
	content := []byte("[]")
	if string(f.role) == "system" {
		content = []byte(`""`)
	}
	o, err := SplitObject(m)
	if err != nil {
		return m
	}
	return o.Set("content", content).Marshal()
}

// messageFacts are what the context rules read from an agent message.
type messageFacts struct {
	// provider and model are the raw values (nil when absent).
	provider, model []byte
	// role is the message's role (empty when it is not a string, or the
	// message not an object); it may share the message's bytes.
	role []byte
	// noContent: "content" is absent or null.
	noContent bool
}

// lacksContent reports whether Pi 1.6 fills in the message's content: a
// system, user, assistant or toolResult message without one.
func (f messageFacts) lacksContent() bool {
	if !f.noContent {
		return false
	}
	switch string(f.role) {
	case "system", "user", "assistant", "toolResult":
		return true
	}
	return false
}

// scanMessage reads the facts of agent message m in one pass over its keys.
func scanMessage(m []byte) messageFacts {
	var f messageFacts
	if len(m) == 0 || m[0] != '{' {
		return f
	}
	var role, content []byte
	// The hot loop of a context: every message of the path is scanned here,
	// its keys compared without copying them.
	_ = jsonscan.EachRawField(m, func(k, v []byte, _ int) {
		switch string(k) {
		case "role":
			role = v
		case "provider":
			f.provider = v
		case "model":
			f.model = v
		case "content":
			content = v
		}
	})
	f.role, _ = jsonscan.StringBytes(role)
	f.noContent = content == nil || string(content) == "null"
	return f
}

// truthy is JavaScript's truthiness of a JSON value, nil standing for
// undefined: false for undefined, null, false, "" and zero, true otherwise.
func truthy(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	switch c := v[0]; {
	case c == 'n' || c == 'f':
		return false
	case c == '"':
		return len(v) > 2
	case c == '-' || c >= '0' && c <= '9':
		f, _ := strconv.ParseFloat(string(v), 64) // ±Inf beyond the range: truthy
		return f != 0
	}
	return true
}

var fieldJSONName = [nFields]string{
	fCustomType: "customType", fContent: "content", fDisplay: "display", fDetails: "details",
	fSummary: "summary", fFromID: "fromId", fTokensBefore: "tokensBefore",
}

// synth builds a synthesised message: prefix, the given fields when present, and
// the timestamp in Unix milliseconds. A custom message's content that is absent
// or null is written as [] (Pi 1.6: entry.content ?? []).
func synth(e Entry, prefix string, fields ...field) json.RawMessage {
	b := make([]byte, 0, 64+len(e.raw))
	b = append(b, prefix...)
	for _, f := range fields {
		v := e.field(f)
		if f == fContent && (v == nil || string(v) == "null") {
			v = []byte("[]")
		}
		if v != nil {
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
