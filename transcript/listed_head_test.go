package transcript_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// ForEachListedSession tells a strict session from its listing, and does not
// fetch it ahead (its reader reads by the head).
func TestStore_ForEachListedSession_HeadListed(t *testing.T) {
	ctx := context.Background()
	cb := faultbucket.Wrap(membucket.New())
	s := newStore(t, cb, transcript.Config{})
	strictWithGhost(t, s)
	// Sessions around it, one whose id extends the strict one's.
	for _, sid := range []string{"a", "strict-x", "strict0", "z"} {
		r := transcript.TranscriptRef{Namespace: strictRef.Namespace, AgentID: strictRef.AgentID, SessionID: sid}
		_, err := s.AppendSegment(ctx, r, [][]byte{entryLine("x", "")}, transcript.NewRandomWriter())
		require.NoError(t, err)
	}
	got := map[string]bool{}
	cb.TakeCounts()
	err := s.ForEachListedSessionAhead(ctx, strictRef.Namespace, "", 1, func(transcript.TranscriptRef) bool { return true },
		func(_ context.Context, l *transcript.Listed) error {
			got[l.Ref().SessionID] = l.HeadListed()
			return nil
		})
	require.NoError(t, err)
	require.Equal(t, map[string]bool{"a": false, "strict": true, "strict-x": false, "strict0": false, "z": false}, got)
	c := cb.TakeCounts()
	require.Equal(t, int64(1), c.List)
	require.Equal(t, int64(4), c.Get, "the default-mode sessions fetched ahead, the strict one not")
	require.False(t, s.Listed(strictRef, nil).HeadListed(), "a Listed made by hand does not know")
}
