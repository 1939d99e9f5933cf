//go:build !unix

package mirror

import "os"

// lockFile is a no-op where flock is not available: the caller must make sure that
// only one Mirror uses an outbox.
func lockFile(*os.File) error { return nil }
