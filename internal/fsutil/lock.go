package fsutil

import "errors"

// ErrLocked is wrapped by LockFile when another holder has the lock.
var ErrLocked = errors.New("locked by another process")
