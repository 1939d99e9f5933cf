//go:build !unix

package main

import "os"

// makeScratch makes a scratch directory in out named scratchPrefix + a random
// suffix. Without flock it is not locked (see scratchPrefix).
func makeScratch(out string) (string, func(), error) {
	dir, err := os.MkdirTemp(out, scratchPrefix)
	if err != nil {
		return "", nil, err
	}
	return dir, func() { _ = os.RemoveAll(dir) }, nil
}

// lockDirIfFree is always false without flock: whether a restore still uses a
// scratch directory cannot be told, so none but a run's own is removed.
func lockDirIfFree(string) (func(), bool) { return nil, false }
