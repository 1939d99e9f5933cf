package bucket

import (
	"context"
	"io"
)

// Replacer is implemented by backends that can overwrite an object unconditionally
// (last writer wins). Only the legacy full-file mirror needs it; the segment store
// never overwrites. Replace is atomic: readers see the old or the new object, never a
// partial one.
type Replacer interface {
	Replace(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) error
}
