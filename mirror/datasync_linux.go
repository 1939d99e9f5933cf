package mirror

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// datasync makes the data of f durable with fdatasync(2): the journal's bytes and
// the file size that makes them readable, without the timestamps an fsync also
// writes (a journal append changes nothing else of the file's inode).
func datasync(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return fmt.Errorf("fdatasync %s: %w", f.Name(), err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			serr = syscall.Fdatasync(int(fd))
			if !errors.Is(serr, syscall.EINTR) {
				return
			}
		}
	}); err != nil {
		return fmt.Errorf("fdatasync %s: %w", f.Name(), err)
	}
	if serr != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: serr}
	}
	return nil
}
