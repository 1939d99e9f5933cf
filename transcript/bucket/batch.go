package bucket

import (
	"context"
	"errors"
	"fmt"
)

// MaxBatchDelete is the most keys one DeleteBatch call takes (S3's limit per
// DeleteObjects request).
const MaxBatchDelete = 1000

// BatchDeleter is the batch delete of a Bucket: many keys in one request where the
// backend has one (S3 DeleteObjects). Compaction deletes a compaction's inputs with
// it, so collecting garbage costs one request instead of one per segment. Missing
// keys are not an error, as with Delete.
type BatchDeleter interface {
	// DeleteBatch deletes up to MaxBatchDelete keys. It returns an error naming the
	// keys it could not delete (some may have been deleted); it may be retried.
	DeleteBatch(ctx context.Context, keys []string) error
}

// DeleteEach deletes keys one by one with d.Delete, checking the batch limit and
// every key first: the DeleteBatch of backends without a batch request.
func DeleteEach(ctx context.Context, d interface {
	Delete(ctx context.Context, key string) error
}, keys []string) error {
	if len(keys) > MaxBatchDelete {
		return fmt.Errorf("delete batch: %d keys, limit %d: %w", len(keys), MaxBatchDelete, ErrInvalidKey)
	}
	for _, k := range keys {
		if err := ValidateKey(k); err != nil {
			return fmt.Errorf("delete batch: %w", err)
		}
	}
	var errs []error
	for _, k := range keys {
		if err := d.Delete(ctx, k); err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("delete batch: %w", errors.Join(errs...))
	}
	return nil
}

// DeleteInBatches deletes keys with DeleteBatch calls of at most MaxBatchDelete
// keys each, in order; it stops at the first call that fails.
func DeleteInBatches(ctx context.Context, bd BatchDeleter, keys []string) error {
	for len(keys) > 0 {
		n := min(len(keys), MaxBatchDelete)
		if err := bd.DeleteBatch(ctx, keys[:n]); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}
