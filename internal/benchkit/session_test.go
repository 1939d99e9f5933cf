package benchkit

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/jsonscan"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// The session written reads back as its header and n entries in one chain, in
// segments of at most the batch size (the header counts in the first), and the
// size returned is theirs as JSONL.
func TestWriteLinearSession(t *testing.T) {
	tests := []struct {
		name         string
		n, batch     int
		wantSegments int
	}{
		{"header only", 0, 3, 1},
		{"one entry", 1, 3, 1},
		{"one full batch", 2, 3, 1},
		{"a batch and one", 3, 3, 2},
		{"batches", 10, 3, 4},
		{"the bench's batch", 7, LinearBatch, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			s, err := transcript.New(transcript.Config{Bucket: membucket.New()})
			require.NoError(t, err)
			defer s.Close()
			ref := transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: "memory", SessionID: "s-1"}
			size, err := WriteLinearSessionBatched(ctx, s, ref, tc.n, tc.batch)
			require.NoError(t, err)
			m, err := s.ReadAll(ctx, ref)
			require.NoError(t, err)
			raws := m.Raw()
			require.Len(t, raws, tc.n+1)
			jsonl, parent := int64(len(raws[0])+1), "null"
			for i, raw := range raws[1:] {
				jsonl += int64(len(raw) + 1)
				require.Equal(t, parent, string(jsonscan.Field(raw, "parentId")), "entry %d", i)
				parent = string(jsonscan.Field(raw, "id"))
			}
			require.Equal(t, jsonl, size)
			// The shapes the bench's figures were measured with.
			require.Equal(t, `{"type":"session","version":3,"id":"s-1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}`, string(raws[0]))
			if tc.n > 0 {
				require.Equal(t, `{"type":"message","id":"9e3779b1","parentId":null,"timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"m0"}}`, string(raws[1]))
			}
			segments := 0
			require.NoError(t, s.ListSessionSegments(ctx, ref.Namespace, ref.AgentID, func(r transcript.TranscriptRef, infos []transcript.SegmentInfo) error {
				require.Equal(t, ref.SessionID, r.SessionID)
				segments += len(infos)
				return nil
			}))
			require.Equal(t, tc.wantSegments, segments)
		})
	}
}

func TestWriteLinearSessionNegative(t *testing.T) {
	s, err := transcript.New(transcript.Config{Bucket: membucket.New()})
	require.NoError(t, err)
	defer s.Close()
	ref := transcript.TranscriptRef{AgentID: "a", SessionID: "s"}
	_, err = WriteLinearSession(t.Context(), s, ref, -1)
	require.ErrorIs(t, err, ErrNegativeCount)
	for _, batch := range []int{0, -1} {
		_, err = WriteLinearSessionBatched(t.Context(), s, ref, 3, batch)
		require.ErrorIs(t, err, ErrNegativeCount, "batch %d", batch)
	}
	infos, err := s.ListSegments(t.Context(), ref)
	require.NoError(t, err)
	require.Empty(t, infos, "nothing written")
}
