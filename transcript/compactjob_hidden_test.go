package transcript_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/s3test"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// An object named like a folder of a session's key layout (".../s1/L0", left
// by `aws s3 cp seg.jsonl.zst s3://b/p/acme/coder/s1/L0` without its "/")
// hides the segments under that folder from MinIO's listings, so the session
// looks older and smaller than it is. CompactAll names such objects to
// CompactOptions.Hidden, for every session it lists, selected or not, with
// visible segments or without; retention must not decide such a session from
// what it sees (it would delete the visible part, the hiding object with it,
// and leave the hidden newer segments without their history): it fails the
// session with ErrHiddenSegments and deletes nothing.
func TestCompactJob_ObjectHidingSegments(t *testing.T) {
	backends := map[string]func(t *testing.T) bucket.Bucket{
		"mem":   func(*testing.T) bucket.Bucket { return membucket.New() },
		"minio": func(t *testing.T) bucket.Bucket { return s3test.MinIO().NewBucket(t, "transcript-hidden-") },
	}
	for name, newBucket := range backends {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b := newBucket(t)
			s := newStore(t, b, transcript.Config{Prefix: "p"})
			w := newWriter(t, "replica-a")
			compacted := transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: "s1"}
			onlyL0 := transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: "s2"}
			ids := appendChain(t, s, compacted, w, "a", "", 2)
			_, err := s.Compact(ctx, compacted, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
			require.NoError(t, err)
			appendChain(t, s, compacted, w, "b", ids[len(ids)-1], 1) // the newest write, in L0
			appendChain(t, s, onlyL0, w, "c", "", 1)
			var hiders []string
			for _, ref := range []transcript.TranscriptRef{compacted, onlyL0} {
				key := s.SessionPrefix(ref) + "L0"
				require.NoError(t, b.Put(ctx, key, bytes.NewReader([]byte("x")), 1, bucket.PutOptions{}))
				hiders = append(hiders, key)
			}
			before := allKeys(t, b)

			got := map[transcript.TranscriptRef][]string{}
			opts := transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce,
				Hidden: func(ref transcript.TranscriptRef, keys []string) { got[ref] = keys }}
			keepNone := func(transcript.TranscriptRef) bool { return false }
			require.NoError(t, s.CompactAll(ctx, "acme", "", 1, opts, keepNone, func(transcript.TranscriptRef, transcript.CompactResult, error) {}))
			require.Equal(t, map[transcript.TranscriptRef][]string{compacted: {hiders[0]}, onlyL0: {hiders[1]}}, got)

			r := transcript.Retention{Rules: []transcript.RetentionRule{{Namespace: "*", Agent: "*", Policy: transcript.RetentionPolicy{KeepLast: 1}}}}
			var errs []error
			require.NoError(t, s.Retain(ctx, "acme", "", &r, transcript.RetentionOptions{DeleteDelay: transcript.DeleteAtOnce},
				func(res transcript.RetentionResult, err error) {
					if res.Ref == compacted {
						errs = append(errs, err)
					}
				}))
			require.Len(t, errs, 1)
			require.ErrorIs(t, errs[0], transcript.ErrHiddenSegments)
			require.ErrorContains(t, errs[0], hiders[0])
			require.Equal(t, before, allKeys(t, b), "nothing deleted")
		})
	}
}
