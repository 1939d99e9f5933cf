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
