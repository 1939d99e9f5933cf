package repository_test

import (
	"context"
	"io"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// fullGets is a bucket that counts its whole-object GETs (not the ranged ones).
type fullGets struct {
	bucket.Bucket
	n atomic.Int64
}

func (f *fullGets) Get(ctx context.Context, key string) (io.ReadCloser, bucket.ObjectInfo, error) {
	f.n.Add(1)
	return f.Bucket.Get(ctx, key)
}

// TestCollectedInputsAreNotARead: a handle whose held segments a compaction
// merged and then collected (delete delay over) learns it from the compacted
// segment's metadata and reads nothing of the session again: the server costs
// what is new. A deleted session is still found gone (TestDeletedUnderAnOpenHandle).
func TestCollectedInputsAreNotARead(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			ctx := t.Context()
			fg := &fullGets{Bucket: be.new(t)}
			e := newEnv(t, fg)
			a, b := e.repo(alice), e.repo(alice)
			s, err := a.Create(ctx, repository.CreateOptions{ID: "s"})
			require.NoError(t, err)
			parent := ""
			for _, id := range []string{"u1", "u2", "u3", "u4"} {
				require.NoError(t, s.Append(ctx, msg(id, parent, id)))
				parent = id
			}
			held, err := b.Open(ctx, "s")
			require.NoError(t, err)
			res, err := e.store.Compact(ctx, held.Ref(), transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
			require.NoError(t, err)
			require.NotEmpty(t, res.Compactions)
			require.Positive(t, res.Deleted)

			fg.n.Store(0)
			require.NoError(t, held.Append(ctx, msg("u5", "u4", "u5"))) // lists the session whole first
			require.Zero(t, fg.n.Load(), "whole-object GETs after the inputs were collected")
			again, err := a.Open(ctx, "s")
			require.NoError(t, err)
			require.Equal(t, 5, again.Snapshot().Entries)
		})
	}
}
