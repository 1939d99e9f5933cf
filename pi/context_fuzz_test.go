package pi_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/transcriptstore/transcript/pi"
)

// fuzzEntry makes entry i of a fuzzed session: op picks its type (every type
// that shapes the context), p its parent and r the entry another field names
// (a compaction's first kept entry, a label's or an edit's target, a branch
// summary's origin), each among the session's ids or one it lacks, so that the
// trees hold dangling parents, cycles, self-parents and duplicate ids.
func fuzzEntry(i int, op, p, r byte, n int) []byte {
	id := func(b byte) string {
		if k := int(b) % (n + 2); k < n {
			return fmt.Sprintf("e%d", k)
		}
		return "missing"
	}
	parent := `"` + id(p) + `"`
	if p%7 == 0 {
		parent = "null"
	}
	self := fmt.Sprintf("e%d", i)
	if op&0x80 != 0 {
		self = id(r) // a duplicate id
	}
	head := fmt.Sprintf(`{"id":%q,"parentId":%s,"timestamp":"2026-01-01T00:00:%02d.000Z",`, self, parent, i%60)
	switch op % 12 {
	case 0:
		return fmt.Appendf(nil, `%s"type":"message","message":{"role":"user","content":"u%d"}}`, head, i)
	case 1:
		return fmt.Appendf(nil, `%s"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"a%d"}],"provider":"p","model":"m"}}`, head, i)
	case 2:
		return fmt.Appendf(nil, `%s"type":"compaction","summary":"s%d","firstKeptEntryId":%q,"tokensBefore":1}`, head, i, id(r))
	case 3:
		return fmt.Appendf(nil, `%s"type":"branch_summary","fromId":%q,"summary":"b%d"}`, head, id(r), i)
	case 4:
		return fmt.Appendf(nil, `%s"type":"custom_message","customType":"x","content":"c%d","display":true}`, head, i)
	case 5:
		return fmt.Appendf(nil, `%s"type":"label","targetId":%q,"label":"l%d"}`, head, id(r), i)
	case 6:
		return fmt.Appendf(nil, `%s"type":"model_change","provider":"p","modelId":"m%d"}`, head, i)
	case 7:
		return fmt.Appendf(nil, `%s"type":"thinking_level_change","thinkingLevel":"high"}`, head)
	case 8:
		return fmt.Appendf(nil, `%s"type":"context_edit","targetId":%q,"replacement":{"content":"r%d"}}`, head, id(r), i)
	case 9:
		return fmt.Appendf(nil, `%s"type":"context_edit","targetId":%q,"replacement":null}`, head, id(r))
	case 10:
		return fmt.Appendf(nil, `%s"type":"leaf","targetId":%q}`, head, id(r))
	default:
		return fmt.Appendf(nil, `%s"type":"message","message":{"role":"toolResult","toolCallId":"t","toolName":"x","content":[{"type":"text","text":"t%d"}],"isError":false}}`, head, i)
	}
}

// FuzzBuildContext builds the context at every entry of a fuzzed session
// tree, and at the default leaf: whatever the tree (cycles, dangling parents,
// duplicate ids, edits and compactions naming anything), it returns, and
// every message is a JSON value.
func FuzzBuildContext(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 1, 0, 2, 2, 1, 8, 3, 1, 5, 4, 0})
	f.Add([]byte{0, 1, 0, 1, 0, 0, 3, 1, 0, 9, 2, 0, 10, 1, 1})
	f.Add([]byte{0x80, 0, 1, 2, 0, 0, 2, 1, 1, 1, 2, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		n := min(len(data)/3, 40)
		entries := make([]pi.Entry, 0, n)
		for i := range n {
			raw := fuzzEntry(i, data[3*i], data[3*i+1], data[3*i+2], n)
			e, err := pi.ParseEntry(raw)
			if err != nil {
				t.Fatalf("entry %d does not parse: %v\n%s", i, err, raw)
			}
			entries = append(entries, e)
		}
		check := func(c pi.Context, at string) {
			for k, m := range c.Messages {
				if !json.Valid(m) {
					t.Fatalf("context at %s: message %d is not JSON: %s", at, k, m)
				}
			}
		}
		check(pi.BuildContextFrom(entries, nil), "the default leaf")
		for _, e := range entries {
			check(pi.BuildContextAt(entries, e.ID()), e.ID())
		}
	})
}
