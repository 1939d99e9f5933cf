package faultbucket_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/buckettest"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
	"github.com/transcriptstore/transcript/transcript/bucket/filebucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// The wrapper without faults is a conforming bucket over each local backend, every
// capability (strict mode's conditional writes included) forwarded.
func TestBucket_Conformance(t *testing.T) {
	t.Run("mem", func(t *testing.T) {
		buckettest.Run(t, func(t *testing.T) bucket.Bucket { return faultbucket.Wrap(membucket.New()) })
	})
	t.Run("file", func(t *testing.T) {
		opts := buckettest.Options{ChecksumNotStored: true, FileDirConflict: true}
		buckettest.RunWithOptions(t, opts, func(t *testing.T) bucket.Bucket {
			b, err := filebucket.New(t.TempDir())
			require.NoError(t, err)
			return faultbucket.Wrap(b)
		})
	})
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

// Every capability of the inner bucket is forwarded, counted as the S3 request it
// makes, and faulted with that request's Op.
func TestBucket_Capabilities(t *testing.T) {
	ctx := t.Context()
	tests := []struct {
		name string
		op   faultbucket.Op
		call func(b bucket.Bucket) error
		want faultbucket.Counts
	}{
		{"GetRange", faultbucket.OpGet, func(b bucket.Bucket) error {
			data, err := b.GetRange(ctx, "k", 1, 2)
			if err == nil && string(data) != "bc" {
				err = fmt.Errorf("got %q", data)
			}
			return err
		}, faultbucket.Counts{Get: 1}},
		{"GetWithETag", faultbucket.OpGet, func(b bucket.Bucket) error {
			_, _, err := b.GetWithETag(ctx, "k")
			return err
		}, faultbucket.Counts{Get: 1}},
		{"PutIf", faultbucket.OpPut, func(b bucket.Bucket) error {
			_, err := b.PutIf(ctx, "new", strings.NewReader("xyz"), 3, bucket.Cond{IfNoneMatch: true})
			return err
		}, faultbucket.Counts{Put: 1, BytesUp: 3}},
		{"Replace", faultbucket.OpReplace, func(b bucket.Bucket) error {
			return b.Replace(ctx, "k", strings.NewReader("wxyz"), 4, bucket.PutOptions{})
		}, faultbucket.Counts{Replace: 1, BytesUp: 4}},
		{"DeleteBatch", faultbucket.OpDelete, func(b bucket.Bucket) error {
			return b.DeleteBatch(ctx, []string{"k", "other"})
		}, faultbucket.Counts{Delete: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := faultbucket.Wrap(membucket.New())
			require.NoError(t, put(ctx, b, "k", "abcd"))
			b.ResetCounts()
			require.NoError(t, tt.call(b))
			require.Equal(t, tt.want, b.Counts())
			b.FailNext(tt.op, 1, nil)
			require.ErrorIs(t, tt.call(b), faultbucket.ErrInjected)
		})
	}
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
