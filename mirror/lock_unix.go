//go:build unix

package mirror

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// errOutboxLocked reports that another Mirror (in this or another process) holds the
// outbox.
var errOutboxLocked = errors.New("outbox is locked by another mirror")

// lockFile takes an exclusive, non-blocking flock on f. The kernel drops it when the
// process dies, so a crashed process never leaves a stale lock.
func lockFile(f *os.File) error {
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return errOutboxLocked
		}
		return fmt.Errorf("lock: %w", err)
	}
	return nil
}
