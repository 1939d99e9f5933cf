//go:build unix

package rusage_test

import (
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/rusage"
)

func TestSelf(t *testing.T) {
	before, err := rusage.SelfCPU()
	require.NoError(t, err)
	buf := make([]byte, 64<<20)
	for i := range buf { // touch every page: the peak RSS holds them
		buf[i] = byte(i)
	}
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) { // burn CPU for a moment
		after, err := rusage.SelfCPU()
		require.NoError(t, err)
		if after-before >= 20*time.Millisecond {
			break
		}
	}
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
