package s3bucket

import (
	"context"
	"fmt"
	"io"

	"github.com/minio/minio-go/v7"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

var _ bucket.RangeReader = (*Bucket)(nil)

// GetRange reads up to n bytes of key from off with one Range GET.
func (b *Bucket) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if err := check(ctx, key); err != nil {
		return nil, fmt.Errorf("get range %s: %w", key, err)
	}
	if n <= 0 {
		return nil, nil
	}
	rctx, cancel := b.timeout(ctx)
	defer cancel()
	opts := minio.GetObjectOptions{}
	if err := opts.SetRange(off, off+n-1); err != nil {
		return nil, fmt.Errorf("get range %s: %w", key, err)
	}
	body, _, err := b.getObject(rctx, key, opts)
	if err != nil {
		return nil, fmt.Errorf("get range %s: %w", key, classify(ctx, err))
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, n))
	if err != nil {
		return nil, fmt.Errorf("get range %s: %w", key, classify(ctx, err))
	}
	return data, nil
}
