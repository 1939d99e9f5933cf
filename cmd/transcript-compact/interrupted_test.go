package main

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestJob_InterruptedSaysHowFarItGot: a run interrupted (SIGINT from an
// operator's Ctrl-C, SIGTERM from a scheduler) prints its summary so far,
// marked "interrupted:", and exits 1 saying it was interrupted, how many
// sessions it got through and that a run again finishes the work. It used to
// exit 1 with "list sessions: ... context canceled" alone: no word of the
// signal, nor of what was done. The sessions the signal stopped part way are
// not failures (they used to count as failed, each with a "context canceled"
// error on stderr): the summary says how many were left part way.
func TestJob_InterruptedSaysHowFarItGot(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			sizes := make([]int, 400)
			for i := range sizes {
				sizes[i] = 2
			}
			populate(t, openStore(t, "file://"+dir), sizes...)
			cmd := exec.Command(binary, "--store", "file://"+dir, "--min-segments", "2", "--parallel", "4")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Start())
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			// Interrupt as soon as a compaction has written its output.
			for {
				if l1, _ := filepath.Glob(filepath.Join(dir, "acme", "coder", "*", "L1")); len(l1) > 0 {
					break
				}
				select {
				case err := <-done:
					t.Fatalf("the run ended before it was interrupted (%v): %s %s", err, stdout.String(), stderr.String())
				case <-time.After(time.Millisecond):
				}
			}
			require.NoError(t, cmd.Process.Signal(sig))
			err := <-done
			var ee *exec.ExitError
			require.True(t, errors.As(err, &ee), "exit 0 when interrupted: %s", stdout.String())
			require.Equal(t, 1, ee.ExitCode(), stderr.String())
			require.Regexp(t, `^interrupted: shard 0/1: \d+ sessions? scanned, compacted \d+`, stdout.String())
			require.Regexp(t, `Error: interrupted after \d+ sessions?, \d+ more left part way \(run again to finish\): .*signal received`, stderr.String())
			require.Regexp(t, ` 0 failed; `, stdout.String())
			require.NotContains(t, stderr.String(), "session ", "no session failed")
			require.NotContains(t, stderr.String(), "context canceled")
		})
	}
}
