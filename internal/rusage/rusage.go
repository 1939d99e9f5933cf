// Package rusage reads the resource usage the benchmarks report: the CPU time
// and the peak resident set size of this process or of a child that has
// exited. Where the system does not keep them (Windows), the functions return
// an error wrapping errors.ErrUnsupported, so that the benchmarks still build
// there and say what they cannot measure.
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
