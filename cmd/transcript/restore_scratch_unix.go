//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// makeScratch makes a scratch directory in out named scratchPrefix + a random
// suffix, holding an exclusive flock on it from before it has that name (see
// scratchPrefix). Where the file system refuses the lock, the directory is
// made all the same: no other run can lock it either, so none removes it.
func makeScratch(out string) (string, func(), error) {
	tmp, err := os.MkdirTemp(out, scratchNewPrefix)
	if err != nil {
		return "", nil, err
	}
	f, err := os.Open(tmp)
	if err != nil {
		_ = os.Remove(tmp)
		return "", nil, err
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) // a new directory: only a failing flock refuses
	dir := filepath.Join(out, scratchPrefix+strings.TrimPrefix(filepath.Base(tmp), scratchNewPrefix))
	if err := os.Rename(tmp, dir); err != nil {
		_ = os.RemoveAll(tmp)
		_ = f.Close()
		return "", nil, err
	}
	return dir, func() {
		_ = os.RemoveAll(dir)
		_ = f.Close() // drops the lock, once the directory is gone
	}, nil
}

// lockDirIfFree takes an exclusive, non-blocking flock on the directory dir;
// false when another open descriptor holds one (a live restore's), or when
// the directory cannot be opened or locked. unlock drops the lock.
func lockDirIfFree(dir string) (unlock func(), ok bool) {
	f, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, false
	}
	return func() { _ = f.Close() }, true
}
