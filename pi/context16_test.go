package pi_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/pi"
)

// The rules Pi 1.6 added (docs/ENTRIES.md), each case's expectation printed by
// Node with Pi 1.6's own buildSessionContext (@earendil-works/pi-coding-agent
// 1.6.0) for the same lines, except where a case says Pi fails. Both builders
// agree, also with a reader that reuses its buffer.
func TestContext_Pi16Rules(t *testing.T) {
	for _, tt := range []struct {
		name    string
		entries []string
		want    string
	}{
		{"lacking content", []string{
			ent("message", "a", "", `"message":{"role":"user","timestamp":1}`),
			ent("message", "b", "a", `"message":{"role":"assistant","content":null,"provider":"p","model":"m"}`),
			ent("message", "c", "b", `"message":{"role":"system","content":null,"sections":{"x":"y"}}`),
			ent("message", "d", "c", `"message":{"role":"toolResult","toolCallId":"t"}`),
			ent("message", "e", "d", `"message":{"role":"custom","content":null}`),
			ent("message", "f", "e", `"message":{"role":"bashExecution"}`),
			ent("custom_message", "g", "f", `"customType":"n","display":true`),
			ent("custom_message", "h", "g", `"customType":"n","content":null`),
		}, `{"messages":[{"role":"user","timestamp":1,"content":[]},{"role":"assistant","content":[],"provider":"p","model":"m"},{"role":"system","content":"","sections":{"x":"y"}},{"role":"toolResult","toolCallId":"t","content":[]},{"role":"custom","content":null},{"role":"bashExecution"},{"role":"custom","customType":"n","content":[],"display":true,"timestamp":1767225600000},{"role":"custom","customType":"n","content":[],"timestamp":1767225600000}],"thinkingLevel":"off","model":{"provider":"p","modelId":"m"}}`},
		{"the system message a compaction recorded", []string{
			ent("message", "a", "", `"message":{"role":"system","content":"old prompt"}`),
			ent("message", "b", "a", `"message":{"role":"user","content":"hi"}`),
			ent("message", "c", "b", `"message":{"role":"system","content":"more"}`),
			ent("compaction", "d", "c", `"summary":"s","firstKeptEntryId":"a","tokensBefore":1,"systemMessage":{"role":"system","content":"old prompt\n\nmore","timestamp":5}`),
			ent("message", "e", "d", `"message":{"role":"system","content":"after"}`),
		}, `{"messages":[{"role":"system","content":"old prompt\n\nmore","timestamp":5},{"role":"compactionSummary","summary":"s","tokensBefore":1,"timestamp":1767225600000},{"role":"user","content":"hi"},{"role":"system","content":"after"}],"thinkingLevel":"off","model":null}`},
		{"falsy system messages; older compactions give nothing", []string{
			ent("compaction", "a", "", `"summary":"s","firstKeptEntryId":"a","tokensBefore":1,"systemMessage":false`),
			ent("compaction", "b", "a", `"summary":"s","firstKeptEntryId":"a","tokensBefore":2,"systemMessage":0.0`),
			ent("compaction", "c", "b", `"summary":"s","firstKeptEntryId":"b","tokensBefore":3,"systemMessage":""`),
		}, `{"messages":[{"role":"compactionSummary","summary":"s","tokensBefore":3,"timestamp":1767225600000}],"thinkingLevel":"off","model":null}`},
		{"truthy odd system messages", []string{
			ent("compaction", "a", "", `"summary":"s","firstKeptEntryId":"a","tokensBefore":1,"systemMessage":{"role":"system"}`),
			ent("compaction", "b", "a", `"summary":"s","firstKeptEntryId":"a","tokensBefore":2,"systemMessage":"0"`),
		}, `{"messages":["0",{"role":"compactionSummary","summary":"s","tokensBefore":2,"timestamp":1767225600000}],"thinkingLevel":"off","model":null}`},
		{"edits: the latest per target; text for an assistant or tool result; null removes", []string{
			ent("message", "a", "", `"message":{"role":"user","content":"u1"}`),
			ent("message", "b", "a", `"message":{"role":"assistant","content":[{"type":"text","text":"a1"}],"provider":"p","model":"m"}`),
			ent("message", "c", "b", `"message":{"role":"toolResult","toolCallId":"t","content":[]}`),
			ent("custom_message", "d", "c", `"customType":"n","content":"c1","display":true`),
			ent("branch_summary", "e", "d", `"summary":"went","fromId":"a"`),
			ent("context_edit", "f", "e", `"targetId":"b","replacement":{"content":"a2"}`),
			ent("context_edit", "g", "f", `"targetId":"a","replacement":{"content":[{"type":"text","text":"u2"}]}`),
			ent("context_edit", "h", "g", `"targetId":"c","replacement":{"content":"t2"}`),
			ent("context_edit", "i", "h", `"targetId":"d","replacement":{}`),
			ent("context_edit", "j", "i", `"targetId":"e","replacement":null`),
			ent("context_edit", "k", "j", `"targetId":"a","replacement":{"content":"u3"}`),
			ent("usage", "l", "k", `"kind":"k","provider":"p","model":"m","usage":{"input":1}`),
		}, `{"messages":[{"role":"user","content":"u3"},{"role":"assistant","content":[{"type":"text","text":"a2"}],"provider":"p","model":"m"},{"role":"toolResult","toolCallId":"t","content":[{"type":"text","text":"t2"}]},{"role":"custom","customType":"n","display":true,"timestamp":1767225600000}],"thinkingLevel":"off","model":{"provider":"p","modelId":"m"}}`},
		{"a replacement that is not an object drops the content", []string{
			ent("message", "a", "", `"message":{"role":"user","content":"u1","timestamp":1}`),
			ent("context_edit", "b", "a", `"targetId":"a","replacement":5`),
		}, `{"messages":[{"role":"user","timestamp":1}],"thinkingLevel":"off","model":null}`},
		{"edits among the entries the compaction keeps; an edit removes a compaction", []string{
			ent("message", "a", "", `"message":{"role":"user","content":"u1"}`),
			ent("message", "b", "a", `"message":{"role":"user","content":"u2"}`),
			ent("context_edit", "c", "b", `"targetId":"b","replacement":null`),
			ent("message", "d", "c", `"message":{"role":"user","content":"u3"}`),
			ent("compaction", "e", "d", `"summary":"one","firstKeptEntryId":"b","tokensBefore":1,"systemMessage":{"role":"system","content":"p"}`),
			ent("context_edit", "f", "e", `"targetId":"d","replacement":{"content":"u3 edited"}`),
			ent("compaction", "g", "f", `"summary":"two","firstKeptEntryId":"d","tokensBefore":2`),
			ent("context_edit", "h", "g", `"targetId":"g","replacement":null`),
		}, `{"messages":[{"role":"user","content":"u3 edited"}],"thinkingLevel":"off","model":null}`},
		{"an edit of a compaction that is not null changes nothing", []string{
			ent("message", "a", "", `"message":{"role":"user","content":"u1"}`),
			ent("compaction", "b", "a", `"summary":"one","firstKeptEntryId":"a","tokensBefore":1,"systemMessage":{"role":"system","content":"p"}`),
			ent("context_edit", "c", "b", `"targetId":"b","replacement":{"content":"x"}`),
		}, `{"messages":[{"role":"system","content":"p"},{"role":"compactionSummary","summary":"one","tokensBefore":1,"timestamp":1767225600000},{"role":"user","content":"u1"}],"thinkingLevel":"off","model":null}`},
		{"a branch summary counts when its summary is truthy", []string{
			ent("branch_summary", "a", "", `"summary":5,"fromId":"x"`),
			ent("branch_summary", "b", "a", `"summary":0,"fromId":"x"`),
			ent("branch_summary", "c", "b", `"summary":{},"fromId":"x"`),
			ent("branch_summary", "d", "c", `"summary":"","fromId":"x"`),
		}, `{"messages":[{"role":"branchSummary","summary":5,"fromId":"x","timestamp":1767225600000},{"role":"branchSummary","summary":{},"fromId":"x","timestamp":1767225600000}],"thinkingLevel":"off","model":null}`},
		// Pi 1.6 fails (TypeError) on these; the store leaves the messages as
		// they are, and still counts the edit as the latest for its target.
		{"an edit without a replacement", []string{
			ent("message", "a", "", `"message":{"role":"user","content":"u1"}`),
			ent("context_edit", "b", "a", `"targetId":"a","replacement":null`),
			ent("context_edit", "c", "b", `"targetId":"a"`),
		}, `{"messages":[{"role":"user","content":"u1"}],"thinkingLevel":"off","model":null}`},
		{"an edited message that is not an object", []string{
			ent("message", "a", "", `"message":"text"`),
			ent("context_edit", "b", "a", `"targetId":"a","replacement":{"content":"x"}`),
		}, `{"messages":["text"],"thinkingLevel":"off","model":null}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			last := parse(t, tt.entries...)
			entries := parse(t, append(tt.entries, ent("custom", "z", last[len(last)-1].ID(), `"customType":"padding, padding"`))...)
			requireContext(t, entries, tt.want)
		})
	}
}

func TestContextEditOf(t *testing.T) {
	for _, tt := range []struct {
		name        string
		line        string
		ok, removes bool
		target      string
		replacement string // "" for none
		content     string // "" for none
	}{
		{"content", ent("context_edit", "e", "a", `"targetId":"t","replacement":{"content":"x"}`), true, false, "t", `{"content":"x"}`, `"x"`},
		{"removes", ent("context_edit", "e", "a", `"targetId":"t","replacement":null`), true, true, "t", `null`, ""},
		{"no content", ent("context_edit", "e", "a", `"targetId":"t","replacement":{}`), true, false, "t", `{}`, ""},
		{"no replacement", ent("context_edit", "e", "a", `"targetId":"t"`), true, false, "t", "", ""},
		{"a target that is not a string", ent("context_edit", "e", "a", `"targetId":7,"replacement":null`), false, false, "", "", ""},
		{"another type", ent("label", "e", "a", `"targetId":"t"`), false, false, "", "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ed, ok := pi.ContextEditOf(parse(t, tt.line)[0])
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.target, ed.Target)
			require.Equal(t, tt.removes, ed.Removes())
			require.Equal(t, tt.replacement, string(ed.Replacement))
			require.Equal(t, tt.content, string(ed.Content()))
		})
	}
}
