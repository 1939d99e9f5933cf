package pi

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
)

// CurrentSystemMessage replays the system messages among messages (a context's,
// in order) into the one system message a compaction records, as Pi 1.6's
// getCurrentSystemMessage (@earendil-works/pi-ai) does: the "content" texts
// that are not empty joined by a blank line (text blocks of one message joined
// by a newline), the "sections" patched by name (a null value removes one), the
// tools added and not removed since ("toolsAdded"/"toolsRemoved", by "name"),
// and the timestamp of the first system message that has one (not null). It
// returns nil when there is no tool and the timestamp is undefined (no system
// message has one, and the last has no "timestamp" key). Keys are
// written in JavaScript's order: integer-like section names first, ascending.
//
// Pi fails (TypeError) on a system message whose content is neither a string
// nor an array, or whose toolsAdded or toolsRemoved is not an array; such a
// value adds nothing here. A text block whose "text" is not a string adds its
// JSON text.
func CurrentSystemMessage(messages []json.RawMessage) json.RawMessage {
	var (
		texts     []string
		sections  Object // in the order of a JavaScript Map
		tools     toolMap
		timestamp []byte
	)
	for _, m := range messages {
		o, err := SplitObject(m)
		if err != nil || string(o.Get("role")) != `"system"` {
			continue
		}
		// timestamp ??= message.timestamp: while it is null or undefined,
		// each system message's own (nil: undefined) replaces it.
		if timestamp == nil || string(timestamp) == "null" {
			timestamp = o.Get("timestamp")
		}
		if text := contentText(o.Get("content")); text != "" {
			texts = append(texts, text)
		}
		for _, s := range jsEntries(o.Get("sections")) {
			switch {
			case string(s.Value) == "null":
				sections = sections.Del(s.Key)
			case sections.Get(s.Key) != nil:
				sections = sections.Set(s.Key, s.Value)
			default:
				sections = append(sections, s)
			}
		}
		tools.replay(o.Get("toolsRemoved"), o.Get("toolsAdded"))
	}
	if timestamp == nil && len(tools.decls) == 0 {
		return nil
	}
	out := Object{{"role", []byte(`"system"`)}, {"content", AppendString(nil, strings.Join(texts, "\n\n"))}}
	if len(sections) > 0 {
		out = append(out, Member{"sections", jsOrder(sections).Marshal()})
	}
	if len(tools.decls) > 0 {
		b := []byte{'['}
		for i, t := range tools.decls {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, t.raw...)
		}
		out = append(out, Member{"toolsAdded", append(b, ']')})
	}
	if timestamp == nil || string(timestamp) == "null" {
		timestamp = []byte("0")
	}
	return append(out, Member{"timestamp", timestamp}).Marshal()
}

// CompactionSystemMessage is the system message Pi 1.6's appendCompaction records in a
// compaction made at time at, given the messages of the context it compacts:
// CurrentSystemMessage with the compaction's time (Unix milliseconds) as its
// timestamp; nil when there is none.
func CompactionSystemMessage(messages []json.RawMessage, at time.Time) json.RawMessage {
	sm := CurrentSystemMessage(messages)
	if sm == nil {
		return nil
	}
	o, err := SplitObject(sm)
	if err != nil {
		return nil
	}
	return o.Set("timestamp", strconv.AppendInt(nil, at.UnixMilli(), 10)).Marshal()
}

// toolMap is the tools of system messages, as a JavaScript Map from each
// tool's "name" to the tool.
type toolMap struct {
	decls []toolDecl
	// objects counts the names that are objects or arrays, each a key of its
	// own (JavaScript compares them by reference).
	objects int
}

// toolDecl is one tool: its key in the map, and its bytes.
type toolDecl struct {
	key string
	raw []byte
}

// replay applies one system message's toolsRemoved, then its toolsAdded: a
// removed name is deleted, an added one replaces the value in its place or
// comes last. A null tool is skipped (Pi fails on it).
func (m *toolMap) replay(removed, added []byte) {
	for _, t := range jsonArray(removed) {
		if key, ok := m.key(t); ok {
			m.decls = slices.DeleteFunc(m.decls, func(d toolDecl) bool { return d.key == key })
		}
	}
	for _, t := range jsonArray(added) {
		key, ok := m.key(t)
		if !ok {
			continue
		}
		if i := slices.IndexFunc(m.decls, func(d toolDecl) bool { return d.key == key }); i >= 0 {
			m.decls[i].raw = t
		} else {
			m.decls = append(m.decls, toolDecl{key, t})
		}
	}
}

// key is the Map key of tool.name: equal strings, and equal other primitives,
// are one key; undefined (no name, or a tool that is not an object) is one
// key; an object or array is a key of its own. ok is false for a null tool.
func (m *toolMap) key(tool []byte) (string, bool) {
	if string(tool) == "null" {
		return "", false
	}
	var name []byte
	if tool[0] == '{' {
		name = topField(tool, "name")
	}
	switch {
	case name == nil:
		return "u", true
	case name[0] == '"':
		s, _ := jsonString(name)
		return "s" + s, true
	case name[0] == '{' || name[0] == '[':
		m.objects++
		return "o" + strconv.Itoa(m.objects), true
	}
	return "p" + string(name), true
}

// contentText is pi-ai's contentText of a system message's content: a string
// as it is, the text of the "text" blocks of an array joined by "\n".
func contentText(content []byte) string {
	if s, ok := jsonString(content); ok {
		return s
	}
	var parts []string
	for _, block := range jsonArray(content) {
		if len(block) == 0 || block[0] != '{' || string(topField(block, "type")) != `"text"` {
			continue
		}
		text := topField(block, "text")
		switch s, ok := jsonString(text); {
		case ok:
			parts = append(parts, s)
		case text == nil || string(text) == "null":
			parts = append(parts, "")
		default:
			parts = append(parts, string(text))
		}
	}
	return strings.Join(parts, "\n")
}

// jsonArray returns the elements of a JSON array (nil for anything else).
func jsonArray(v []byte) [][]byte {
	if len(v) == 0 || v[0] != '[' {
		return nil
	}
	var elems []json.RawMessage
	if json.Unmarshal(v, &elems) != nil {
		return nil
	}
	out := make([][]byte, len(elems))
	for i, e := range elems {
		out[i] = e
	}
	return out
}

// jsEntries is JavaScript's Object.entries of a parsed JSON value: an object's
// members (one per key, the last value at the first key's place, integer-like
// keys first) or an array's elements by index; nothing for anything else.
func jsEntries(v []byte) Object {
	switch {
	case len(v) > 0 && v[0] == '{':
		o, err := SplitObject(v)
		if err != nil {
			return nil
		}
		var out Object
		for _, m := range o {
			if out.Get(m.Key) == nil {
				out = append(out, Member{m.Key, o.Get(m.Key)})
			}
		}
		return jsOrder(out)
	case len(v) > 0 && v[0] == '[':
		var out Object
		for i, e := range jsonArray(v) {
			out = append(out, Member{strconv.Itoa(i), e})
		}
		return out
	}
	return nil
}

// jsOrder orders the members of an object as JavaScript enumerates a plain
// object's keys: integer-like keys (array indexes) first, ascending, then the
// others in their order.
func jsOrder(o Object) Object {
	out := slices.Clone(o)
	slices.SortStableFunc(out, func(a, b Member) int {
		ia, aok := arrayIndex(a.Key)
		ib, bok := arrayIndex(b.Key)
		switch {
		case aok && bok:
			return int(ia - ib)
		case aok:
			return -1
		case bok:
			return 1
		}
		return 0
	})
	return out
}

// arrayIndex reports whether key is an array index in JavaScript's sense: the
// canonical decimal form of an integer from 0 to 2^32-2.
func arrayIndex(key string) (int64, bool) {
	n, err := strconv.ParseUint(key, 10, 32)
	if err != nil || n == 1<<32-1 || strconv.FormatUint(n, 10) != key {
		return 0, false
	}
	return int64(n), true
}
