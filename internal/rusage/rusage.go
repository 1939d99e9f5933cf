// Package rusage reads the resource usage the benchmarks report: the CPU time
// and the peak resident set size of this process or of a child that has
// exited, and the CPU time of another running process (Linux). Where the
// system does not keep them (Windows; another process's CPU time anywhere but
// Linux), the functions return an error wrapping errors.ErrUnsupported, so
// that the benchmarks still build there and say what they cannot measure.
package rusage

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// errNoUsage is returned by ChildPeakRSS for a process state without usage.
var errNoUsage = errors.New("no resource usage for the process")

// SelfCPU returns the user plus system CPU time this process has used.
func SelfCPU() (time.Duration, error) { return selfCPU() }

// ProcessCPU returns the user plus system CPU time that process pid, all its
// threads, has used: another process of this machine, such as the object
// store's server a benchmark runs against. It is read from /proc/PID/stat, in
// steps of 10 ms, so a figure over a short span is only good as a mean of
// many; other systems than Linux return an error wrapping
// errors.ErrUnsupported, and a process that is gone one wrapping
// fs.ErrNotExist.
func ProcessCPU(pid int) (time.Duration, error) {
	if pid <= 0 {
		return 0, fmt.Errorf("CPU time of process %d: not a process ID", pid)
	}
	return processCPU(pid)
}

// SelfPeakRSS returns the peak resident set size of this process, in bytes.
func SelfPeakRSS() (int64, error) { return selfPeakRSS() }

// ChildPeakRSS returns the peak resident set size, in bytes, of the exited
// process whose state ps is.
func ChildPeakRSS(ps *os.ProcessState) (int64, error) {
	if ps == nil {
		return 0, fmt.Errorf("peak RSS: %w", errNoUsage)
	}
	return childPeakRSS(ps)
}
