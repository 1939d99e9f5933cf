//go:build !unix

package rusage

import (
	"errors"
	"fmt"
	"os"
	"time"
)

func selfCPU() (time.Duration, error) {
	return 0, fmt.Errorf("process CPU time: %w", errors.ErrUnsupported)
}

func selfPeakRSS() (int64, error) {
	return 0, fmt.Errorf("peak RSS: %w", errors.ErrUnsupported)
}

func childPeakRSS(*os.ProcessState) (int64, error) {
	return 0, fmt.Errorf("peak RSS: %w", errors.ErrUnsupported)
}
