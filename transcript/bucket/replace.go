package bucket

import (
	"context"
	"io"
)

// Replacer is the unconditional overwrite of a Bucket (last writer wins). Only the
// legacy full-file mirror needs it; the segment store never overwrites.
type Replacer interface {
	// Replace writes key from the first size bytes of r (size -1: to EOF) whether
	// or not it exists, storing opts as Put does. It is as atomic as Put: readers
	// see the old or the new object, never a partial one, and if r fails or ctx
	// ends before all bytes are read the old object (or none) remains.
	Replace(ctx context.Context, key string, r io.Reader, size int64, opts PutOptions) error
}
