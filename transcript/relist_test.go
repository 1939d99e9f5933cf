package transcript_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// slowBatches is a slow S3 server: a GET takes getDelay, and a batch delete
// removes its keys one after another, deleteEvery apart (as SeaweedFS does under
// load), after closing started.
type slowBatches struct {
	*membucket.Bucket
	getDelay, deleteEvery time.Duration
	started               chan struct{}
}

func (b *slowBatches) Get(ctx context.Context, key string) (io.ReadCloser, bucket.ObjectInfo, error) {
	time.Sleep(b.getDelay)
	return b.Bucket.Get(ctx, key)
}

func (b *slowBatches) DeleteBatch(ctx context.Context, keys []string) error {
	close(b.started)
	for _, k := range keys {
		time.Sleep(b.deleteEvery)
		if err := b.Bucket.Delete(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

// TestStore_ReadDuringSlowBatchDelete: a read that runs while a compaction's batch
// delete removes the inputs key by key meets a vanished segment on listing after
// listing; it pauses before each new one (relistPause) until the delete is through,
// instead of giving up with ErrVanished after a few immediate listings, and reads
// every entry from the compacted segment.
func TestStore_ReadDuringSlowBatchDelete(t *testing.T) {
	ctx := context.Background()
	b := &slowBatches{Bucket: membucket.New(), getDelay: 30 * time.Millisecond, deleteEvery: 25 * time.Millisecond,
		started: make(chan struct{})}
	s := newStore(t, b, transcript.Config{})
	want := appendChain(t, s, ref, newWriter(t, "w"), "e", "", 12)
	compacted := make(chan error, 1)
	go func() {
		_, err := s.Compact(ctx, ref, transcript.CompactOptions{DeleteDelay: transcript.DeleteAtOnce})
		compacted <- err
	}()
	<-b.started
	got, err := s.ReadAll(ctx, ref)
	require.NoError(t, err, "the read outlasts the batch delete (12 keys, 25 ms apart)")
	require.Empty(t, got.Missing(want))
	require.NoError(t, <-compacted)
}
