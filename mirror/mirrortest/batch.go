package mirrortest

import (
	"context"

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
