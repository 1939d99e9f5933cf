package transcript_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
)

// piHeader is a Pi session header line.
func piHeader(id string) []byte {
	return []byte(`{"type":"session","version":3,"id":"` + id + `","timestamp":"2026-09-25T22:29:10.000Z","cwd":"/w"}`)
}

// TestSessionExists_LeftoversAreNoSession: segments without the session's
// header (what appends racing a delete leave, or a partial copy) read as no
// session, yet SessionExists counted them, so a create over them failed with
// bucket.ErrExists while every read said not found. They are no session for
// SessionExists either, and a create removes them first: the new session does
// not merge their entries in. A session whose header is stored, directly or
// in a compaction, exists.
func TestSessionExists_LeftoversAreNoSession(t *testing.T) {
	for name, newBucket := range testBackends() {
		for _, strict := range []bool{false, true} {
			t.Run(name+map[bool]string{false: "/default", true: "/strict"}[strict], func(t *testing.T) {
				ctx := context.Background()
				s := newStore(t, newBucket(t), transcript.Config{})
				w := newWriter(t, "w")
				ref := transcript.TranscriptRef{AgentID: "a", SessionID: "s"}
				_, err := s.AppendSegment(ctx, ref, [][]byte{entry("u1", "")}, w)
				require.NoError(t, err)
				_, err = s.AppendSegment(ctx, ref, [][]byte{entry("u2", "u1")}, w)
				require.NoError(t, err)
				exists, err := s.SessionExists(ctx, ref)
				require.NoError(t, err)
				require.False(t, exists, "segments without a header are no session")

				_, _, err = s.CreateSession(ctx, ref, [][]byte{piHeader("s"), entry("n1", "")}, w, transcript.CreateOptions{Strict: strict, Head: "n1"})
				require.NoError(t, err, "a create over leftovers")
				exists, err = s.SessionExists(ctx, ref)
				require.NoError(t, err)
				require.True(t, exists)
				infos, err := s.ListSegments(ctx, ref)
				require.NoError(t, err)
				require.Len(t, infos, 1, "the leftovers are gone, the create's segment is there")
				res, err := s.ReadAll(ctx, ref)
				require.NoError(t, err)
				require.Len(t, res.Entries, 2, "the header and n1, nothing of the leftovers")

				if !strict {
					// Compacted: the header is in the compaction's output.
					_, err = s.AppendSegment(ctx, ref, [][]byte{entry("n2", "n1")}, w)
					require.NoError(t, err)
					_, err = s.Compact(ctx, ref, transcript.CompactOptions{})
					require.NoError(t, err)
					exists, err = s.SessionExists(ctx, ref)
					require.NoError(t, err)
					require.True(t, exists)
				}
			})
		}
	}
}
