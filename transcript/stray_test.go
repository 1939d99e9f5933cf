package transcript_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// TestStore_StrayObjectsUnderLayoutNames: objects another tool dropped under a
// folder whose name no id may take (a level "L0", "gc") directly under a
// namespace or an agent are outside every session, as an object directly there
// is: readers never see them, and ListAgents and ListSessions skip such
// folders. StrayObjects names them, so that verify reports a namespace holding
// acme/coder/L0/KEY.jsonl.zst (a session level lost in a copy: `rclone copy
// SRC/acme/coder/s1 DST/acme/coder`), acme/L1/x or acme/coder/gc/x; it used to
// name only the objects directly under the prefix ("0 problems"). The
// namespace's payload store (acme/payloads/) is the one such folder the layout
// has, and is not stray.
func TestStore_StrayObjectsUnderLayoutNames(t *testing.T) {
	ctx := context.Background()
	b := membucket.New()
	s := newStore(t, b, transcript.Config{})
	_, err := s.AppendSegment(ctx, ref, [][]byte{entry("a", "")}, newWriter(t, "w"))
	require.NoError(t, err)
	stray := map[string][]string{ // agent ("" for the namespace) -> keys
		"":      {"acme/L1/y.json", "acme/gc/z"},
		"coder": {"acme/coder/L0/20261203T143751.600000000Z-gen-0000000000000009-0123456789abcdef.jsonl.zst", "acme/coder/gc/x.json"},
	}
	for _, keys := range stray {
		for _, k := range keys {
			require.NoError(t, b.Put(ctx, k, strings.NewReader("junk"), 4, bucket.PutOptions{}))
		}
	}
	// The payload store's folder is part of the layout, at the namespace only.
	require.NoError(t, b.Put(ctx, "acme/payloads/ab/cd", strings.NewReader("data"), 4, bucket.PutOptions{}))
	require.NoError(t, b.Put(ctx, "acme/coder/payloads/x", strings.NewReader("junk"), 4, bucket.PutOptions{}))
	stray["coder"] = append(stray["coder"], "acme/coder/payloads/x")
	for agent, want := range stray {
		got, err := s.StrayObjects(ctx, "acme", agent)
		require.NoError(t, err)
		require.ElementsMatch(t, want, got, "agent %q", agent)
	}
}
