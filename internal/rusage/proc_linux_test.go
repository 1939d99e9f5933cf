//go:build linux

package rusage_test

import (
	"io/fs"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/rusage"
)

// TestProcessCPU reads this process as another one: the CPU it burns shows
// in /proc, which truncates user and system time to 10 ms each, so a
// difference of two readings is within 20 ms of getrusage's.
func TestProcessCPU(t *testing.T) {
	pid := os.Getpid()
	before, err := rusage.ProcessCPU(pid)
	require.NoError(t, err)
	self0, err := rusage.SelfCPU()
	require.NoError(t, err)
	burnCPU(t, 100*time.Millisecond, 5*time.Second)
	after, err := rusage.ProcessCPU(pid)
	require.NoError(t, err)
	self, err := rusage.SelfCPU()
	require.NoError(t, err)
	require.GreaterOrEqual(t, after-before, 70*time.Millisecond, "burnt %v", self-self0)
	require.LessOrEqual(t, after-before, self-self0+30*time.Millisecond)

	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	_, err = rusage.ProcessCPU(cmd.Process.Pid) // exited and reaped
	require.ErrorIs(t, err, fs.ErrNotExist)
	_, err = rusage.ProcessCPU(0)
	require.Error(t, err)
}
