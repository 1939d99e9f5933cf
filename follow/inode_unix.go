//go:build unix

package follow

import (
	"io/fs"
	"syscall"
)

// inodeOf returns the inode number of a file (0 where the system does not say):
// a file replaced under its name (renamed over, deleted and created again) has
// another.
func inodeOf(st fs.FileInfo) uint64 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(s.Ino)
	}
	return 0
}
