package faultbucket

import (
	"context"
	"io"
	"time"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// GetRange implements bucket.RangeReader (counted and faulted as an OpGet).
func (b *Bucket) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if err := b.before(ctx, OpGet, key); err != nil {
		return nil, err
	}
	data, err := b.inner.GetRange(ctx, key, off, n)
	if err = b.after(OpGet, key, err); err != nil {
		return nil, err
	}
	return data, nil
}

// GetWithETag implements bucket.Conditional (counted and faulted as an OpGet).
func (b *Bucket) GetWithETag(ctx context.Context, key string) ([]byte, string, error) {
	if err := b.before(ctx, OpGet, key); err != nil {
		return nil, "", err
	}
	data, etag, err := b.inner.GetWithETag(ctx, key)
	if err = b.after(OpGet, key, err); err != nil {
		return nil, "", err
	}
	return data, etag, nil
}

// GetIfChanged implements bucket.ChangeReader (counted and faulted as an
// OpGet), with the inner bucket's own when it has one.
func (b *Bucket) GetIfChanged(ctx context.Context, key, etag string) ([]byte, string, bool, error) {
	if err := b.before(ctx, OpGet, key); err != nil {
		return nil, "", false, err
	}
	data, got, changed, err := bucket.GetIfChanged(ctx, b.inner, key, etag)
	if err = b.after(OpGet, key, err); err != nil {
		return nil, "", false, err
	}
	return data, got, changed, nil
}

// PutIf implements bucket.Conditional (counted and faulted as an OpPut).
func (b *Bucket) PutIf(ctx context.Context, key string, r io.Reader, size int64, cond bucket.Cond) (string, error) {
	if err := b.before(ctx, OpPut, key); err != nil {
		return "", err
	}
	cr := &bucket.CountingReader{R: r}
	etag, err := b.inner.PutIf(ctx, key, cr, size, cond)
	b.addBytes(cr.N)
	if err = b.after(OpPut, key, err); err != nil {
		return "", err
	}
	return etag, nil
}

// DeleteBatch implements bucket.BatchDeleter: one request, counted and faulted as
// one OpDelete under the first key, as S3's DeleteObjects is.
func (b *Bucket) DeleteBatch(ctx context.Context, keys []string) error {
	key := ""
	if len(keys) > 0 {
		key = keys[0]
	}
	if err := b.before(ctx, OpDelete, key); err != nil {
		return err
	}
	return b.after(OpDelete, key, b.inner.DeleteBatch(ctx, keys))
}

// Now implements bucket.Clock with the inner bucket's clock (not counted as a
// request).
func (b *Bucket) Now(ctx context.Context) (time.Time, error) {
	return b.inner.Now(ctx)
}
