package repository

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// viewBucket shows a subset of a bucket's segments: segment keys that keep rejects
// do not exist for it (List skips them; Get, GetRange, GetWithETag and Stat answer
// bucket.ErrNotFound). Other keys pass through, and so do writes. A transcript.Store over
// a viewBucket therefore union-merges exactly the kept segments with the store's
// own merge rules, which is how strict reads (only committed segments) and reads as
// of a time are made. It holds its bucket in a field, not embedded, so that every
// read a bucket offers is filtered here.
type viewBucket struct {
	inner  bucket.Bucket
	prefix string
	keep   func(transcript.SegmentInfo) bool
}

var _ bucket.Bucket = viewBucket{}

func (v viewBucket) hidden(key string) bool {
	info, err := transcript.ParseKey(v.prefix, key)
	return err == nil && !v.keep(info)
}

func (v viewBucket) Get(ctx context.Context, key string) (io.ReadCloser, bucket.ObjectInfo, error) {
	if v.hidden(key) {
		return nil, bucket.ObjectInfo{}, fmt.Errorf("get %s: %w", key, bucket.ErrNotFound)
	}
	return v.inner.Get(ctx, key)
}

func (v viewBucket) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if v.hidden(key) {
		return nil, fmt.Errorf("get range %s: %w", key, bucket.ErrNotFound)
	}
	return v.inner.GetRange(ctx, key, off, n)
}

func (v viewBucket) GetWithETag(ctx context.Context, key string) ([]byte, string, error) {
	if v.hidden(key) {
		return nil, "", fmt.Errorf("get %s: %w", key, bucket.ErrNotFound)
	}
	return v.inner.GetWithETag(ctx, key)
}

func (v viewBucket) Stat(ctx context.Context, key string) (bucket.ObjectInfo, error) {
	if v.hidden(key) {
		return bucket.ObjectInfo{}, fmt.Errorf("stat %s: %w", key, bucket.ErrNotFound)
	}
	return v.inner.Stat(ctx, key)
}

func (v viewBucket) List(ctx context.Context, opts bucket.ListOptions, fn func(bucket.ObjectInfo) error) error {
	return v.inner.List(ctx, opts, func(oi bucket.ObjectInfo) error {
		if !oi.IsPrefix && v.hidden(oi.Key) {
			return nil
		}
		return fn(oi)
	})
}

func (v viewBucket) Put(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	return v.inner.Put(ctx, key, r, size, opts)
}

func (v viewBucket) Replace(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	return v.inner.Replace(ctx, key, r, size, opts)
}

func (v viewBucket) PutIf(ctx context.Context, key string, r io.Reader, size int64, cond bucket.Cond) (string, error) {
	return v.inner.PutIf(ctx, key, r, size, cond)
}

func (v viewBucket) Delete(ctx context.Context, key string) error { return v.inner.Delete(ctx, key) }

func (v viewBucket) DeleteBatch(ctx context.Context, keys []string) error {
	return v.inner.DeleteBatch(ctx, keys)
}

func (v viewBucket) Now(ctx context.Context) (time.Time, error) { return v.inner.Now(ctx) }

// view returns a read store of the repository's namespace that sees only the
// segments keep accepts (all, when keep is nil).
func (r *Repository) view(keep func(transcript.SegmentInfo) bool) (*transcript.Store, error) {
	if keep == nil {
		return r.store, nil
	}
	s, err := transcript.New(transcript.Config{
		Bucket:    viewBucket{inner: r.bucket, prefix: r.store.Prefix(), keep: keep},
		Prefix:    r.store.Prefix(),
		Namespace: r.ns,
		Clock:     r.store.Clock(),
		Encoder:   r.enc,
		Decoder:   r.dec,
	})
	if err != nil {
		return nil, fmt.Errorf("read view: %w", err)
	}
	return s, nil
}
