package transcript_test

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// beforeOutputBucket calls before once, just before the first compacted segment
// (a key under /L1/) is stored: what another job does while a compaction merges.
type beforeOutputBucket struct {
	bucket.Bucket
	once   sync.Once
	before func()
}

func (b *beforeOutputBucket) Put(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	if strings.Contains(key, "/L1/") && b.before != nil {
		b.once.Do(b.before)
	}
	return b.Bucket.Put(ctx, key, r, size, opts)
}

// TestCompact_SessionDeletedWhileMerging: a compaction whose inputs are all
// deleted while it merges them (retention or Store.Delete removed the session,
// or another compaction that holds them deleted them) deletes its own output:
// stored, it brought a deleted session back whole, with no mark, after the
// retention run had reported it deleted. A compaction whose inputs are still
// there keeps its output, and a competing one loses nothing.
func TestCompact_SessionDeletedWhileMerging(t *testing.T) {
	other := transcript.TranscriptRef{Namespace: ref.Namespace, AgentID: ref.AgentID, SessionID: "newer"}
	for name, newBucket := range testBackends() {
		for _, tc := range []struct {
			name string
			// during runs on a store over the inner bucket before the output is stored.
			during  func(t *testing.T, s *transcript.Store)
			gone    bool // the session is deleted for good
			skipped string
		}{
			{name: "nothing happens", during: func(*testing.T, *transcript.Store) {}},
			{name: "retention deletes the session", gone: true, skipped: transcript.SkipSessionDeleted,
				during: func(t *testing.T, s *transcript.Store) {
					r := transcript.Retention{Rules: []transcript.RetentionRule{{Namespace: transcript.AnyName, Agent: transcript.AnyName,
						Policy: transcript.RetentionPolicy{KeepLast: 1}}}}
					res := retained(t, s, r, transcript.RetentionOptions{DeleteDelay: transcript.DeleteAtOnce})
					require.Equal(t, transcript.RetentionDeleted, res[ref.AgentID+"/"+ref.SessionID].Action)
				}},
			{name: "Store.Delete", gone: true, skipped: transcript.SkipSessionDeleted,
				during: func(t *testing.T, s *transcript.Store) {
					require.NoError(t, s.Delete(context.Background(), ref))
				}},
			{name: "another compaction deletes the inputs", skipped: transcript.SkipSessionDeleted,
				during: func(t *testing.T, s *transcript.Store) {
					res, err := s.Compact(context.Background(), ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
					require.NoError(t, err)
					require.Equal(t, 4, res.Deleted)
				}},
		} {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				ctx := context.Background()
				inner := newBucket(t)
				b := &beforeOutputBucket{Bucket: inner}
				s := newStore(t, b, transcript.Config{})
				w := newWriter(t, "w")
				want := appendChain(t, s, ref, w, "e", "", 4)
				appendChain(t, s, other, w, "o", "", 1) // newer: retention keeps it
				b.before = func() { tc.during(t, newStore(t, inner, transcript.Config{})) }

				res, err := s.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
				require.NoError(t, err)
				require.Equal(t, tc.skipped, res.Skipped)
				infos, err := s.ListSegments(ctx, ref)
				require.NoError(t, err)
				if tc.gone {
					require.Empty(t, infos, "the deleted session stays deleted")
					require.Empty(t, res.Compactions)
					return
				}
				require.Len(t, infos, 1, "one compacted segment holds the session")
				got, err := s.ReadAll(ctx, ref)
				require.NoError(t, err)
				require.Equal(t, want, ids(got), "every entry once")
			})
		}
	}
}
