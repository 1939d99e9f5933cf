//go:build unix

package rusage_test

import (
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/rusage"
)

// burnCPU spins until this process has used d more CPU time, or for at most
// within of wall time.
func burnCPU(t *testing.T, d, within time.Duration) {
	t.Helper()
	start, err := rusage.SelfCPU()
	require.NoError(t, err)
	for deadline := time.Now().Add(within); time.Now().Before(deadline); {
		now, err := rusage.SelfCPU()
		require.NoError(t, err)
		if now-start >= d {
			return
		}
	}
}

func TestSelf(t *testing.T) {
	before, err := rusage.SelfCPU()
	require.NoError(t, err)
	buf := make([]byte, 64<<20)
	for i := range buf { // touch every page: the peak RSS holds them
		buf[i] = byte(i)
	}
	burnCPU(t, 20*time.Millisecond, time.Second)
	after, err := rusage.SelfCPU()
	require.NoError(t, err)
	require.Greater(t, after, before)
	peak, err := rusage.SelfPeakRSS()
	require.NoError(t, err)
	require.Greater(t, peak, int64(len(buf)), "the 64 MiB touched count, in bytes")
	require.Less(t, peak, int64(64)<<30, "bytes, not a unit 1024 times too large")
	require.Equal(t, byte(1), buf[1])
}

func TestChildPeakRSS(t *testing.T) {
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	peak, err := rusage.ChildPeakRSS(cmd.ProcessState)
	require.NoError(t, err)
	require.Greater(t, peak, int64(100<<10), "a process holds at least 100 KiB")
	_, err = rusage.ChildPeakRSS(nil)
	require.Error(t, err)
}
