package transcript_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript"
)

// TestEntry_TypeReadWithTheID: every read that scans an entry for its id
// reports its "type" as pi.ScanLinks reads it (the one rule), so that a
// consumer need not scan it again; a read that took the id from a compacted
// segment's entry index reports no type rather than a wrong one.
func TestEntry_TypeReadWithTheID(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, newBucket(t), transcript.Config{})
	w := newWriter(t, "w1")
	first := [][]byte{
		[]byte(`{"type":"session","version":3,"id":"h","timestamp":"2026-09-25T22:29:10.000Z","cwd":"/w"}`),
		entry("a", ""),
		[]byte(`{"type":"label","id":"b","parentId":"a","label":"x","type":"leaf","targetId":"a"}`), // the last "type" wins
	}
	second := [][]byte{
		[]byte(`{"t\u0079pe":"session_info","id":"c","parentId":"a","name":"n"}`), // an escaped key
		[]byte(`{"type":"some_future_type","id":"d","parentId":"c"}`),
	}
	_, h, err := s.CreateSession(ctx, ref, first, w, transcript.CreateOptions{Strict: true, Head: "b"})
	require.NoError(t, err)
	_, h, err = s.CommitSegment(ctx, ref, h, second, w, "d", nil)
	require.NoError(t, err)
	want := map[string]string{"h": pi.TypeSession, "a": pi.TypeMessage, "b": pi.TypeLeaf, "c": pi.TypeSessionInfo, "d": "some_future_type"}
	check := func(name string, entries []transcript.Entry, indexed bool) {
		t.Helper()
		require.Len(t, entries, len(want), name)
		for _, e := range entries {
			l, err := pi.ScanLinks(e.Raw)
			require.NoError(t, err)
			require.Equal(t, want[e.ID], l.Type, "%s: the fixture", name)
			if indexed && e.Type == "" {
				continue
			}
			require.Equal(t, want[e.ID], e.Type, "%s: entry %s", name, e.ID)
		}
	}
	all, err := s.ReadAll(ctx, ref)
	require.NoError(t, err)
	check("ReadAll", all.Entries, false)
	_, inc, err := s.ReadCommitted(ctx, ref, h, transcript.SegmentSet{})
	require.NoError(t, err)
	check("ReadCommitted", inc.Entries, false)
	inc, err = s.ReadNew(ctx, ref, transcript.SegmentSet{})
	require.NoError(t, err)
	check("ReadNew", inc.Entries, false)
	lean, err := s.ReadLean(ctx, ref)
	require.NoError(t, err)
	var leanEntries []transcript.Entry
	for i := range lean.Len() {
		leanEntries = append(leanEntries, lean.Entry(i))
	}
	check("ReadLean", leanEntries, false)

	res, err := s.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 2, Full: true})
	require.NoError(t, err)
	require.Len(t, res.Compactions, 1)
	all, err = s.ReadAll(ctx, ref)
	require.NoError(t, err)
	check("ReadAll after compaction", all.Entries, true)
}
