package filebucket

import (
	"context"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

var _ bucket.BatchDeleter = (*Bucket)(nil)

// DeleteBatch deletes keys (see bucket.BatchDeleter).
func (b *Bucket) DeleteBatch(ctx context.Context, keys []string) error {
	return bucket.DeleteEach(ctx, b, keys)
}
