package filebucket

import (
	"context"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// DeleteBatch deletes keys one by one (see bucket.BatchDeleter).
func (b *Bucket) DeleteBatch(ctx context.Context, keys []string) error {
	return bucket.DeleteEach(ctx, b, keys)
}
