package bucket

import (
	"context"
	"errors"
	"fmt"
)

// ErrInvalidRange is returned (wrapped) by GetRange for a negative offset or length.
var ErrInvalidRange = errors.New("invalid range")

// RangeReader is the ranged read of a Bucket (an HTTP Range GET). Readers use it to
// fetch only a segment's leading metadata frame, so that deciding whether a segment
// holds anything new costs a few hundred bytes instead of the whole object.
type RangeReader interface {
	// GetRange returns up to n bytes of key starting at off; fewer when the object
	// ends first, none when it ends before off. A missing key returns an error
	// wrapping ErrNotFound; a negative off or n, one wrapping ErrInvalidRange.
	GetRange(ctx context.Context, key string, off, n int64) ([]byte, error)
}

// ValidateRange checks the offset and length of a GetRange: neither may be
// negative. It returns an error wrapping ErrInvalidRange.
func ValidateRange(off, n int64) error {
	if off < 0 || n < 0 {
		return fmt.Errorf("%w: offset %d, length %d", ErrInvalidRange, off, n)
	}
	return nil
}
