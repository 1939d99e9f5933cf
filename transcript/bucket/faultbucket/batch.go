package faultbucket

import (
	"context"
	"time"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

var _ bucket.BatchDeleter = (*Bucket)(nil)

// DeleteBatch implements bucket.BatchDeleter: one request (counted and faulted as
// one OpDelete, under the first key) when the inner bucket is a BatchDeleter, as
// S3's DeleteObjects is; otherwise one Delete per key through this wrapper.
func (b *Bucket) DeleteBatch(ctx context.Context, keys []string) error {
	bd, ok := b.inner.(bucket.BatchDeleter)
	if !ok {
		return bucket.DeleteEach(ctx, b, keys)
	}
	key := ""
	if len(keys) > 0 {
		key = keys[0]
	}
	if err := b.before(ctx, OpDelete, key); err != nil {
		return err
	}
	return b.after(OpDelete, key, bd.DeleteBatch(ctx, keys))
}

var _ bucket.Clock = (*Bucket)(nil)

// Now implements bucket.Clock with the inner bucket's clock (not counted as a
// request), or the local clock when the inner bucket has none.
func (b *Bucket) Now(ctx context.Context) (time.Time, error) {
	if c, ok := b.inner.(bucket.Clock); ok {
		return c.Now(ctx)
	}
	return time.Now(), ctx.Err()
}
