package repository

import (
	"context"
	"maps"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// TestIndexAfterLoadIsWhatAddBuilds: a load leaves a handle's index to be built
// when first needed; built then, it holds exactly what add builds entry by
// entry (every id held and its bytes, the header's and those of lines that are
// not entries included, and the parents that are missing), and an append after
// the load sees it: a conflicting id and an unknown parent are refused.
func TestIndexAfterLoadIsWhatAddBuilds(t *testing.T) {
	ctx := context.Background()
	store, repo := newAliceRepo(t, membucket.New())
	w, err := transcript.NewWriter("foreign")
	require.NoError(t, err)
	ref := transcript.TranscriptRef{Namespace: repo.Namespace(), AgentID: DefaultAgentID, SessionID: "s"}
	lines := [][]byte{
		[]byte(`{"type":"session","version":3,"id":"h","timestamp":"2026-03-01T12:00:00.000Z","cwd":"/w"}`),
		[]byte(`{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"hi"}}`),
		[]byte(`{"type":"message","id":"b","parentId":"gone","message":{"role":"user","content":"orphan"}}`),
		[]byte(`{"id":"odd","note":"a line of a foreign writer: no type"}`),
		[]byte(`{"type":"session","version":3,"id":"h2","timestamp":"2026-03-01T12:00:00.000Z","cwd":"/x"}`),
		[]byte(`{"type":"label","id":"c","parentId":"a","targetId":"a","label":"x"}`),
	}
	for _, l := range lines {
		_, err := store.AppendSegment(ctx, ref, [][]byte{l}, w)
		require.NoError(t, err)
	}
	s, err := repo.Open(ctx, "s")
	require.NoError(t, err)
	s.mu.Lock()
	require.True(t, s.unindexed, "a load leaves the index out")
	require.Nil(t, s.byID)
	got, gotWaiting := maps.Clone(s.index()), maps.Clone(s.waiting)
	s.mu.Unlock()

	inc, err := store.ReadNew(ctx, ref, transcript.SegmentSet{})
	require.NoError(t, err)
	eager := &Session{byID: map[string][]byte{}, waiting: map[string]bool{}}
	eager.add(inc.Entries)
	require.Equal(t, eager.byID, got)
	require.Equal(t, eager.waiting, gotWaiting)
	require.Equal(t, map[string]bool{"gone": true}, gotWaiting)
	require.Contains(t, got, "odd")
	require.Contains(t, got, "h2")

	// An append after a fresh load indexes before it checks.
	s, err = repo.Open(ctx, "s")
	require.NoError(t, err)
	err = s.Append(ctx, []byte(`{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"other bytes"}}`))
	require.ErrorIs(t, err, transcript.ErrConflict)
	s, err = repo.Open(ctx, "s")
	require.NoError(t, err)
	err = s.Append(ctx, []byte(`{"type":"message","id":"d","parentId":"nowhere","message":{"role":"user","content":"x"}}`))
	require.ErrorIs(t, err, ErrInvalid)
	require.NoError(t, s.Append(ctx, []byte(`{"type":"message","id":"d","parentId":"c","message":{"role":"user","content":"x"}}`)))
}
