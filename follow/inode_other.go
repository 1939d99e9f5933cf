//go:build !unix

package follow

import "io/fs"

// inodeOf returns 0 where inode numbers are not available: a file replaced
// under its name is then found by its size and bytes alone.
func inodeOf(fs.FileInfo) uint64 { return 0 }
