//go:build !unix

package fsutil

import "os"

// LockFile opens (creating if needed) the file at path. Where flock is not
// available it locks nothing: the caller must make sure that one process at a
// time uses what the file guards.
func LockFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
}
