//go:build !unix

package follow_test

import "io/fs"

// inode returns 0, as the follower's own inodeOf does where inode numbers are
// not available.
func inode(fs.FileInfo) uint64 { return 0 }
