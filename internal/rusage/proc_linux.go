//go:build linux

package rusage

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	var d time.Duration
	if err == nil {
		d, err = parseProcStat(b)
	}
	if err != nil {
		return 0, fmt.Errorf("CPU time of process %d: %w", pid, err)
	}
	return d, nil
}
