package sessiontree

import (
	"io"
	"time"
)

// Config configures trees. The zero value of every field but Root is usable.
type Config struct {
	// Root is the directory under which the local files live (see FilesOf).
	Root string
	// Uploader receives each flush's new local entries; nil keeps the tree local.
	Uploader Uploader
	// Store is read by Pull and Restore; nil disables them.
	Store StoreReader
	// Now returns the current time for new entries; nil means time.Now.
	Now func() time.Time
	// Rand is the source of new entry ids; nil means crypto/rand.
	Rand io.Reader
	// NoSync skips fsync (tests and benchmarks only; weakens durability).
	NoSync bool
}

func (c Config) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}
