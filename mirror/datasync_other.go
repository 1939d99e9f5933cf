//go:build !linux

package mirror

import "os"

// datasync makes the data of f durable: an fsync where fdatasync(2) is not
// available.
func datasync(f *os.File) error { return f.Sync() }
