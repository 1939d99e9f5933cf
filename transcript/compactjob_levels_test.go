package transcript_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// A session compacted with Full after every write climbs one level each time.
// At the highest level a key holds (L255) a compaction has no level left to
// write: the session must be left as it is and said to be skipped, never
// compacted into a segment of a wrapped level (L0) that supersedes nothing, a
// whole copy of the session added on every run while the summary says it was
// compacted and its inputs marked.
func TestCompactJob_FullAtTopLevel(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, membucket.New(), transcript.Config{Prefix: "p"})
	w := newWriter(t, "replica-a")
	full := transcript.CompactOptions{Full: true, DeleteDelay: transcript.DeleteAtOnce}
	want := appendChain(t, s, ref, w, "r", "", 1)
	for i := 1; i <= 255; i++ {
		want = append(want, appendChain(t, s, ref, w, fmt.Sprintf("r%d", i), want[len(want)-1], 1)...)
		_, err := s.Compact(ctx, ref, full)
		require.NoError(t, err)
	}
	require.Equal(t, map[int]int{255: 1}, levels(t, s, ref))

	want = append(want, appendChain(t, s, ref, w, "last", want[len(want)-1], 1)...)
	for _, dry := range []bool{true, false} {
		opts := full
		opts.DryRun = dry
		res, err := s.Compact(ctx, ref, opts)
		require.NoError(t, err)
		require.Empty(t, res.Compactions, "dry run %v: no level above L255", dry)
		require.Zero(t, res.Marked)
		require.Equal(t, transcript.SkipTopLevel, res.Skipped)
		require.Equal(t, map[int]int{0: 1, 255: 1}, levels(t, s, ref), "dry run %v: nothing written", dry)
	}
	got, err := s.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, want, ids(got))

	// Merging level by level still compacts what lies below the top level.
	res, err := s.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
	require.NoError(t, err)
	require.Empty(t, res.Skipped)
}
