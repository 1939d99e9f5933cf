package s3bucket

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/minio/minio-go/v7"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// GetRange reads up to n bytes of key from off with one Range GET. A range that
// starts at or after the object's end is empty: S3 answers it with 416 Range Not
// Satisfiable, which GetRange maps to no bytes.
func (b *Bucket) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if err := check(ctx, key); err != nil {
		return nil, fmt.Errorf("get range %s: %w", key, err)
	}
	if err := bucket.ValidateRange(off, n); err != nil {
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
	if err != nil && rangeNotSatisfiable(err) {
		// The object exists (a missing key is NoSuchKey) and ends at or before off.
		return nil, nil
	}
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

// rangeNotSatisfiable reports S3's answer to a Range GET that starts at or after
// the end of the object (and to any Range GET of an empty object).
func rangeNotSatisfiable(err error) bool {
	resp := minio.ToErrorResponse(err)
	return resp.Code == "InvalidRange" || resp.StatusCode == http.StatusRequestedRangeNotSatisfiable
}
