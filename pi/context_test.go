package pi_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/pi"
)

// TestWriteContextPath: streaming the context of a path writes exactly what
// BuildContext returns for it, at every leaf of a tree with model and thinking
// changes, custom messages, branch summaries, a compaction and a null message.
func TestWriteContextPath(t *testing.T) {
	entries := parse(t,
		msg("a", ""),
		ent("thinking_level_change", "b", "a", `"thinkingLevel":"high"`),
		ent("model_change", "c", "b", `"provider":"p","modelId":"m"`),
		ent("message", "d", "c", `"message":{"role":"assistant","content":"x","provider":"q","model":"n"}`),
		ent("custom_message", "e", "d", `"customType":"note","content":"hi","display":true`),
		ent("branch_summary", "f", "a", `"summary":"went elsewhere","fromId":"d"`),
		ent("compaction", "g", "e", `"summary":"sum","firstKeptEntryId":"d","tokensBefore":12`),
		msg("h", "g"),
		ent("message", "i", "h", `"message":null`),
		ent("custom", "j", "i", `"customType":"x"`),
	)
	idx := pi.NewIndex(entries)
	for leaf := range entries {
		path := pi.PathTo(entries, idx, leaf)
		want := append(pi.BuildContext(entries, idx, leaf).JSON(), '\n')
		var got bytes.Buffer
		require.NoError(t, pi.WriteContextPath(&got, len(path), func(k int) pi.Entry { return entries[path[k]] }))
		require.Equal(t, string(want), got.String(), "leaf %d", leaf)
	}
	var got bytes.Buffer
	require.NoError(t, pi.WriteContextPath(&got, 0, nil))
	require.Equal(t, string(pi.EmptyContext().JSON())+"\n", got.String())
}

// A setting that is not a string is copied as Pi copies it, and an absent one
// leaves its key out as JSON.stringify leaves out undefined (expectations printed
// by Node for Pi's {messages, thinkingLevel, model}); both builders agree.
func TestContext_SettingsAsPiCopiesThem(t *testing.T) {
	for _, tt := range []struct {
		name    string
		entries []string
		want    string
	}{
		{"strings", []string{
			ent("thinking_level_change", "a", "", `"thinkingLevel":"low"`),
			ent("model_change", "b", "a", `"provider":"p","modelId":"m"`),
		}, `{"messages":[],"thinkingLevel":"low","model":{"provider":"p","modelId":"m"}}`},
		{"absent", []string{
			ent("thinking_level_change", "a", "", ``),
			ent("model_change", "b", "a", `"modelId":"m"`),
		}, `{"messages":[],"model":{"modelId":"m"}}`},
		{"null and a number", []string{
			ent("thinking_level_change", "a", "", `"thinkingLevel":null`),
			ent("model_change", "b", "a", `"provider":7`),
		}, `{"messages":[],"thinkingLevel":null,"model":{"provider":7}}`},
		{"an object, and neither", []string{
			ent("thinking_level_change", "a", "", `"thinkingLevel":{"x":1}`),
			ent("model_change", "b", "a", `"other":1`),
		}, `{"messages":[],"thinkingLevel":{"x":1},"model":{}}`},
		{"an assistant without its model", []string{
			ent("model_change", "a", "", `"provider":"p","modelId":"m"`),
			ent("message", "b", "a", `"message":{"role":"assistant","content":[],"provider":"q"}`),
		}, `{"messages":[{"role":"assistant","content":[],"provider":"q"}],"thinkingLevel":"off","model":{"provider":"q"}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// A last entry that sets nothing, so that a reader's buffer holds
			// other bytes once the settings were read (below).
			last := parse(t, tt.entries...)
			entries := parse(t, append(tt.entries, ent("custom", "z", last[len(last)-1].ID(), `"customType":"padding, padding"`))...)
			requireContext(t, entries, tt.want)
		})
	}
}

// requireContext requires the context of entries at their last entry to be
// want, from BuildContext and from WriteContextPath, also with a reader that
// parses each entry into one reused buffer, as a streaming one may (what was
// read before is overwritten).
func requireContext(t *testing.T, entries []pi.Entry, want string) {
	t.Helper()
	idx := pi.NewIndex(entries)
	leaf := len(entries) - 1
	require.Equal(t, want, string(pi.BuildContext(entries, idx, leaf).JSON()))
	path := pi.PathTo(entries, idx, leaf)
	var got bytes.Buffer
	require.NoError(t, pi.WriteContextPath(&got, len(path), func(k int) pi.Entry { return entries[path[k]] }))
	require.Equal(t, want+"\n", got.String())

	var buf []byte
	reused := func(k int) pi.Entry {
		buf = append(buf[:0], entries[path[k]].Raw()...)
		e, err := pi.ParseEntry(buf)
		require.NoError(t, err)
		return e
	}
	got.Reset()
	require.NoError(t, pi.WriteContextPath(&got, len(path), reused))
	require.Equal(t, want+"\n", got.String())
}
