package repository_test

import (
	"context"
	"io"
	"sync"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// countingBucket counts the requests sent to the bucket it wraps, by kind:
// "list", "get" (Get, GetRange, GetWithETag, Stat) and "put" (Put, PutIf,
// Replace, Delete, DeleteBatch).
type countingBucket struct {
	bucket.Bucket
	mu sync.Mutex
	n  map[string]int
}

func newCountingBucket(inner bucket.Bucket) *countingBucket {
	return &countingBucket{Bucket: inner, n: map[string]int{}}
}

func (b *countingBucket) count(kind string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n[kind]++
}

// take returns the counts so far and starts again from zero.
func (b *countingBucket) take() map[string]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := b.n
	b.n = map[string]int{}
	return n
}

func (b *countingBucket) Get(ctx context.Context, key string) (io.ReadCloser, bucket.ObjectInfo, error) {
	b.count("get")
	return b.Bucket.Get(ctx, key)
}

func (b *countingBucket) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	b.count("get")
	return b.Bucket.GetRange(ctx, key, off, n)
}

func (b *countingBucket) GetWithETag(ctx context.Context, key string) ([]byte, string, error) {
	b.count("get")
	return b.Bucket.GetWithETag(ctx, key)
}

func (b *countingBucket) Stat(ctx context.Context, key string) (bucket.ObjectInfo, error) {
	b.count("get")
	return b.Bucket.Stat(ctx, key)
}

func (b *countingBucket) List(ctx context.Context, opts bucket.ListOptions, fn func(bucket.ObjectInfo) error) error {
	b.count("list")
	return b.Bucket.List(ctx, opts, fn)
}

func (b *countingBucket) Put(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	b.count("put")
	return b.Bucket.Put(ctx, key, r, size, opts)
}

func (b *countingBucket) PutIf(ctx context.Context, key string, r io.Reader, size int64, cond bucket.Cond) (string, error) {
	b.count("put")
	return b.Bucket.PutIf(ctx, key, r, size, cond)
}

func (b *countingBucket) Replace(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	b.count("put")
	return b.Bucket.Replace(ctx, key, r, size, opts)
}

func (b *countingBucket) Delete(ctx context.Context, key string) error {
	b.count("put")
	return b.Bucket.Delete(ctx, key)
}

func (b *countingBucket) DeleteBatch(ctx context.Context, keys []string) error {
	b.count("put")
	return b.Bucket.DeleteBatch(ctx, keys)
}
