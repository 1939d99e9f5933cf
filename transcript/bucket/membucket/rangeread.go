package membucket

import (
	"bytes"
	"context"
	"fmt"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// GetRange returns a copy of up to n bytes of key from off.
func (b *Bucket) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if err := check(ctx, key); err != nil {
		return nil, fmt.Errorf("get range %s: %w", key, err)
	}
	if err := bucket.ValidateRange(off, n); err != nil {
		return nil, fmt.Errorf("get range %s: %w", key, err)
	}
	b.mu.RLock()
	obj, ok := b.objects[key]
	b.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("get range %s: %w", key, bucket.ErrNotFound)
	}
	size := int64(len(obj.data))
	if off >= size || n <= 0 {
		return nil, nil
	}
	return bytes.Clone(obj.data[off:min(size, off+n)]), nil
}
