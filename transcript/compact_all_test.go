package transcript_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
)

// TestCompactAll_OneListing: CompactAll compacts every session of a namespace from
// one recursive listing (no LIST per session), reports each, and honours keep.
func TestCompactAll_OneListing(t *testing.T) {
	for name, newBucket := range testBackends() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			fb := faultbucket.Wrap(newBucket(t))
			s := newStore(t, fb, transcript.Config{Prefix: "p"})
			w := newWriter(t, "w")
			refs := []transcript.TranscriptRef{
				{Namespace: "acme", AgentID: "coder", SessionID: "s1"},
				{Namespace: "acme", AgentID: "coder", SessionID: "s1-a"},
				{Namespace: "acme", AgentID: "writer", SessionID: "s2"},
				{Namespace: "acme", AgentID: "writer", SessionID: "skipped"},
				{Namespace: "other", AgentID: "coder", SessionID: "s1"},
			}
			want := map[transcript.TranscriptRef][]string{}
			for _, r := range refs {
				want[r] = appendChain(t, s, r, w, "e", "", 5)
			}
			fb.ResetCounts()
			var mu sync.Mutex
			got := map[transcript.TranscriptRef]transcript.CompactResult{}
			err := s.CompactAll(ctx, "acme", "", 2, transcript.CompactOptions{DeleteDelay: transcript.DeleteAtOnce},
				func(r transcript.TranscriptRef) bool { return r.SessionID != "skipped" },
				func(r transcript.TranscriptRef, res transcript.CompactResult, err error) {
					require.NoError(t, err)
					mu.Lock()
					defer mu.Unlock()
					got[r] = res
				})
			require.NoError(t, err)
			require.Equal(t, int64(1), fb.Counts().List, "one listing for the namespace")
			require.Len(t, got, 3)
			for _, r := range refs[:3] {
				require.Equal(t, 5, got[r].Deleted, r.String())
				require.Equal(t, map[int]int{1: 1}, levels(t, s, r))
			}
			for _, r := range refs[3:] {
				require.Equal(t, map[int]int{0: 5}, levels(t, s, r), "not selected")
			}
			for _, r := range refs {
				res, err := s.ReadAll(ctx, r)
				require.NoError(t, err)
				require.Equal(t, want[r], ids(res))
			}
		})
	}
}
