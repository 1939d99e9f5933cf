package s3bucket

import (
	"context"
	"errors"
	"fmt"

	"github.com/minio/minio-go/v7"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// DeleteBatch deletes keys with one DeleteObjects request (see bucket.BatchDeleter).
func (b *Bucket) DeleteBatch(ctx context.Context, keys []string) error {
	if len(keys) > bucket.MaxBatchDelete {
		return fmt.Errorf("delete batch: %d keys, limit %d: %w", len(keys), bucket.MaxBatchDelete, bucket.ErrInvalidKey)
	}
	for _, k := range keys {
		if err := check(ctx, k); err != nil {
			return fmt.Errorf("delete batch: %s: %w", k, err)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	rctx, cancel := b.timeout(ctx)
	defer cancel()
	objects := make(chan minio.ObjectInfo, len(keys))
	for _, k := range keys {
		objects <- minio.ObjectInfo{Key: k}
	}
	close(objects)
	var errs []error
	for res := range b.client.RemoveObjectsWithResult(rctx, b.cfg.Bucket, objects, minio.RemoveObjectsOptions{}) {
		if res.Err == nil {
			continue
		}
		err := classify(ctx, res.Err)
		if errors.Is(err, bucket.ErrNotFound) {
			continue
		}
		errs = append(errs, fmt.Errorf("delete %s: %w", res.ObjectName, err))
	}
	if len(errs) > 0 {
		return fmt.Errorf("delete batch: %w", errors.Join(errs...))
	}
	return nil
}
