package transcript_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// TestStore_FollowerMarker: a follower's marker lives under its namespace in
// a folder no id can take, so it is neither an agent nor a stray object, and a
// namespace's sessions deleted on purpose leave it: only an emptied bucket or
// prefix loses it. A second put keeps the first marker; a store bound to
// another namespace neither sees nor writes it.
func TestStore_FollowerMarker(t *testing.T) {
	ctx := context.Background()
	b := membucket.New()
	s := newStore(t, b, transcript.Config{Prefix: "p"})
	ref := transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: "s1"}
	_, err := s.AppendSegment(ctx, ref, [][]byte{entry("a", "")}, newWriter(t, "w"))
	require.NoError(t, err)

	has, err := s.FollowerMarkerExists(ctx, "acme", "f-1")
	require.NoError(t, err)
	require.False(t, has)
	require.NoError(t, s.PutFollowerMarker(ctx, "acme", "f-1", []byte(`{"n":1}`)))
	require.NoError(t, s.PutFollowerMarker(ctx, "acme", "f-1", []byte(`{"n":2}`)))
	has, err = s.FollowerMarkerExists(ctx, "acme", "f-1")
	require.NoError(t, err)
	require.True(t, has)
	rc, _, err := b.Get(ctx, "p/acme/.followers/f-1")
	require.NoError(t, err)
	body := make([]byte, 16)
	n, _ := rc.Read(body)
	require.NoError(t, rc.Close())
	require.Equal(t, `{"n":1}`, string(body[:n]))

	agents, err := s.ListAgents(ctx, "acme")
	require.NoError(t, err)
	require.Equal(t, []string{"coder"}, agents)
	stray, err := s.StrayObjects(ctx, "acme", "")
	require.NoError(t, err)
	require.Empty(t, stray)

	require.NoError(t, s.Delete(ctx, ref))
	has, err = s.FollowerMarkerExists(ctx, "acme", "f-1")
	require.NoError(t, err)
	require.True(t, has, "deleting a session keeps the markers")

	other := newStore(t, b, transcript.Config{Prefix: "p", Namespace: "other"})
	has, err = other.FollowerMarkerExists(ctx, "acme", "f-1")
	require.NoError(t, err)
	require.False(t, has)
	require.ErrorIs(t, other.PutFollowerMarker(ctx, "acme", "f-2", nil), bucket.ErrNotFound)
	require.ErrorIs(t, s.PutFollowerMarker(ctx, "acme", "../x", nil), transcript.ErrInvalidRef)
}
