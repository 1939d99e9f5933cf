//go:build !linux

package rusage

import (
	"errors"
	"fmt"
	"time"
)

func processCPU(pid int) (time.Duration, error) {
	return 0, fmt.Errorf("CPU time of process %d: %w", pid, errors.ErrUnsupported)
}
