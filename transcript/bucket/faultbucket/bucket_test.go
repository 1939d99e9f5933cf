package faultbucket_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/buckettest"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// The wrapper without faults is a conforming bucket.
func TestBucket_Conformance(t *testing.T) {
	buckettest.Run(t, func(t *testing.T) bucket.Bucket { return faultbucket.Wrap(membucket.New()) })
}

func put(ctx context.Context, b bucket.Bucket, key, data string) error {
	return b.Put(ctx, key, bytes.NewReader([]byte(data)), int64(len(data)), bucket.PutOptions{Checksum: data})
}

func TestBucket_FailNext(t *testing.T) {
	ctx := context.Background()
	b := faultbucket.Wrap(membucket.New())
	boom := errors.New("boom")
	b.FailNext(faultbucket.OpPut, 2, boom)
	for range 2 {
		err := put(ctx, b, "a", "x")
		require.ErrorIs(t, err, faultbucket.ErrInjected)
		require.ErrorIs(t, err, boom)
	}
	require.NoError(t, put(ctx, b, "a", "x"))
	_, err := b.Stat(ctx, "a")
	require.NoError(t, err)
	c := b.Counts()
	require.Equal(t, int64(3), c.Put)
	require.Equal(t, int64(1), c.Stat)
	require.Equal(t, int64(1), c.BytesUp)
	require.Equal(t, int64(4), c.Requests())
}

func TestBucket_LoseNextResponses(t *testing.T) {
	ctx := context.Background()
	b := faultbucket.Wrap(membucket.New())
	b.LoseNextResponses(faultbucket.OpPut, 1)
	require.ErrorIs(t, put(ctx, b, "a", "x"), faultbucket.ErrInjected)
	_, err := b.Stat(ctx, "a")
	require.NoError(t, err, "the write went through")
	require.NoError(t, put(ctx, b, "a", "x"), "a retry of the same write succeeds")
}

func TestBucket_HangAndDelay(t *testing.T) {
	b := faultbucket.Wrap(membucket.New())
	b.Hang(faultbucket.OpPut)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, put(ctx, b, "a", "x"), context.DeadlineExceeded)

	done := make(chan error, 1)
	go func() { done <- put(context.Background(), b, "a", "x") }()
	time.Sleep(20 * time.Millisecond)
	b.Heal()
	require.NoError(t, <-done)

	b.SetDelay(faultbucket.OpGet, 30*time.Millisecond)
	start := time.Now()
	rc, _, err := b.Get(context.Background(), "a")
	require.NoError(t, err)
	rc.Close()
	require.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond)
}

type noReplace struct{ bucket.Bucket }

func TestBucket_ReplaceUnsupported(t *testing.T) {
	b := faultbucket.Wrap(noReplace{membucket.New()})
	err := b.Replace(context.Background(), "a", bytes.NewReader(nil), 0, bucket.PutOptions{})
	require.ErrorIs(t, err, errors.ErrUnsupported)
}

func TestBucket_DeleteBatchCountsOneRequest(t *testing.T) {
	ctx := context.Background()
	b := faultbucket.Wrap(membucket.New())
	for _, k := range []string{"a/1", "a/2", "a/3"} {
		require.NoError(t, b.Put(ctx, k, strings.NewReader("x"), 1, bucket.PutOptions{}))
	}
	b.ResetCounts()
	require.NoError(t, b.DeleteBatch(ctx, []string{"a/1", "a/2", "a/3"}))
	require.Equal(t, int64(1), b.Counts().Delete, "one DeleteObjects request")
	_, err := b.Stat(ctx, "a/2")
	require.ErrorIs(t, err, bucket.ErrNotFound)
}
