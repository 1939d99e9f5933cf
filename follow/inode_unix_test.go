//go:build unix

package follow_test

import (
	"io/fs"
	"syscall"
)

// inode returns a file's inode number.
func inode(st fs.FileInfo) uint64 { return uint64(st.Sys().(*syscall.Stat_t).Ino) }
