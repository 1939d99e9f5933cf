package bucket

import (
	"context"
	"errors"
	"fmt"
	"io"
)

// RangeReader is implemented by backends that can read part of an object in one
// request (an HTTP Range GET). Readers use it to fetch only a segment's leading
// metadata frame, so that deciding whether a segment holds anything new costs a
// few hundred bytes instead of the whole object.
type RangeReader interface {
	// GetRange returns up to n bytes of key starting at off; fewer when the object
	// ends first. A missing key returns an error wrapping ErrNotFound.
	GetRange(ctx context.Context, key string, off, n int64) ([]byte, error)
}

// ReadRange reads up to n bytes of key from off: with one ranged request when b is
// a RangeReader, otherwise by opening the whole object and reading only what is
// asked for.
func ReadRange(ctx context.Context, b Reader, key string, off, n int64) ([]byte, error) {
	if off < 0 || n < 0 {
		return nil, fmt.Errorf("read range of %s: negative offset or length", key)
	}
	if rr, ok := b.(RangeReader); ok {
		return rr.GetRange(ctx, key, off, n)
	}
	rc, _, err := b.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if _, err := io.CopyN(io.Discard, rc, off); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, fmt.Errorf("read range of %s: %w", key, err)
	}
	data, err := io.ReadAll(io.LimitReader(rc, n))
	if err != nil {
		return nil, fmt.Errorf("read range of %s: %w", key, err)
	}
	return data, nil
}
