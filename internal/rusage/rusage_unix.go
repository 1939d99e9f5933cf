//go:build unix

package rusage

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

func selfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

func selfPeakRSS() (int64, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return int64(ru.Maxrss) * maxRSSUnit, nil
}

func childPeakRSS(ps *os.ProcessState) (int64, error) {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok || ru == nil {
		return 0, fmt.Errorf("peak RSS: %w", errNoUsage)
	}
	return int64(ru.Maxrss) * maxRSSUnit, nil
}
