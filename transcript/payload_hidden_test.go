package transcript_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// TestPayloadGC_RefusesAListingThatMayMissSegments: an object named like an
// agent's, a session's or a session folder's key prefix hides what lies
// under that folder from MinIO's listings, so the collector may not see the
// segments there and would take their payloads for unreferenced ones. It
// refuses (ErrHiddenSegments) and marks nothing, whoever calls it; objects
// that hide nothing (a follower's marker, a file in a session's folder) do
// not stop it.
func TestPayloadGC_RefusesAListingThatMayMissSegments(t *testing.T) {
	tests := []struct {
		key    string
		hiding bool
	}{
		{"acme/coder", true},
		{"acme/coder/s1", true},
		{"acme/coder/s1/L0", true},
		{"acme/coder/s1/gc", true},
		{"acme/coder/s1/gc/L0", true},
		{"acme/.followers/f-1", false},
		{"acme/coder/s1/notes.txt", false},
		{"acme/payloads/README", false},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			ctx := context.Background()
			b := newBucket(t)
			s := gcStore(t, b)
			gone := transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: "gone"}
			_, err := s.AppendSegment(ctx, gone, [][]byte{imageEntry("i1", "", imageData(7, 2*testThreshold))}, newWriter(t, "w"))
			require.NoError(t, err)
			require.NoError(t, s.Delete(ctx, gone))
			require.NoError(t, b.Put(ctx, tt.key, strings.NewReader("junk"), 4, bucket.PutOptions{}))

			gc, err := s.CollectPayloads(ctx, "acme", gcNow)
			if !tt.hiding {
				require.NoError(t, err)
				require.Equal(t, 1, gc.Marked, "the deleted session's payload")
				return
			}
			require.ErrorIs(t, err, transcript.ErrHiddenSegments)
			require.ErrorContains(t, err, tt.key)
			require.Zero(t, gc.Marked)
			require.Len(t, payloadKeys(t, b, "", "acme"), 1)
		})
	}
}
