package main

import (
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The scratch directories of restore. A run builds its files in one hidden
// directory of --out, ".restore-*", and moves them into place from there; it
// removes the directory when it ends, even interrupted (Ctrl-C, SIGTERM), but
// a run killed (kill -9, a crash, a power cut) leaves it behind, possibly big.
// So each run first removes the scratch directories of runs into the same
// --out that are no longer running.
//
// A run tells them apart by flock(2), where the platform has it (unix): a
// running restore holds an exclusive flock on its scratch directory itself
// (an open descriptor of the directory) until it has removed it, and the
// kernel drops the lock when the process dies, however it dies. The directory
// is made as ".restore.new-*", locked and only then renamed ".restore-*"
// (the lock goes with the directory), so a ".restore-*" that another run can
// lock has no live owner: that run removes it (only a name os.MkdirTemp
// makes, the prefix and decimal digits, is taken for a scratch directory). One it cannot lock (its owner
// is running, or the file system has no flock) is left alone. A ".restore.new-*"
// (a run killed in the instant between making and locking it) is removed once
// it is older than scratchNewGrace and can be locked. A scratch directory of
// an older version of restore, which took no lock, counts as left behind.
// Where there is no flock, a run removes nothing but its own scratch.
const (
	scratchPrefix    = ".restore-"
	scratchNewPrefix = ".restore.new-"
	scratchNewGrace  = time.Minute
)

// newScratch makes the scratch directory of a restore into out, after removing
// those that earlier restores into out left behind (see scratchPrefix). It
// returns the directory and done, which removes it and drops its lock.
func newScratch(out string) (dir string, done func(), err error) {
	removeStaleScratch(out)
	return makeScratch(out)
}

// removeStaleScratch removes the scratch directories in out whose restore is
// no longer running (see scratchPrefix); failures are ignored (a directory
// left is only space, and the next run tries again).
func removeStaleScratch(out string) {
	entries, err := os.ReadDir(out)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() { // a symbolic link is not followed
			continue
		}
		switch {
		case isScratchName(name, scratchPrefix):
		case isScratchName(name, scratchNewPrefix):
			info, err := e.Info()
			if err != nil || time.Since(info.ModTime()) < scratchNewGrace {
				continue
			}
		default:
			continue
		}
		dir := filepath.Join(out, name)
		unlock, ok := lockDirIfFree(dir)
		if !ok {
			continue
		}
		_ = os.RemoveAll(dir)
		unlock()
	}
}

// isScratchName reports whether name is prefix and the decimal digits
// os.MkdirTemp puts after it: a folder a user named ".restore-old", say, is
// never taken for a restore's scratch.
func isScratchName(name, prefix string) bool {
	digits, ok := strings.CutPrefix(name, prefix)
	if !ok || digits == "" {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
