//go:build !unix

package filebucket

import (
	"context"
	"errors"
	"fmt"
)

// lock fails: without flock(2) the conditional-write lock cannot exclude other
// processes, so PutIf refuses rather than pretend (see "Conditional writes").
func (b *Bucket) lock(context.Context) (func(), error) {
	return nil, fmt.Errorf("lock bucket: flock: %w", errors.ErrUnsupported)
}
