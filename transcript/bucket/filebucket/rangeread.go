package filebucket

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// GetRange reads up to n bytes of key from off.
func (b *Bucket) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if err := check(ctx, key); err != nil {
		return nil, fmt.Errorf("get range %s: %w", key, err)
	}
	if err := bucket.ValidateRange(off, n); err != nil {
		return nil, fmt.Errorf("get range %s: %w", key, err)
	}
	f, err := os.Open(b.path(key))
	if err != nil {
		return nil, fmt.Errorf("get range %s: %w", key, mapNotFound(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = bucket.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get range %s: %w", key, err)
	}
	if off >= fi.Size() || n <= 0 {
		return nil, nil
	}
	buf := make([]byte, min(n, fi.Size()-off))
	k, err := f.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("get range %s: %w", key, err)
	}
	return buf[:k], nil
}
