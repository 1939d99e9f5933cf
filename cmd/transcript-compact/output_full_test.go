package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestJob_ReportThatCannotBeWrittenFails: a run whose plan or summary could
// not be written to stdout (here /dev/full: a full disk under
// `transcript-compact --dry-run > plan.txt`) exits 1 naming the write error.
// The text summary and the dry run's plan used to be written unchecked: the
// run exited 0 with the plan lost.
func TestJob_ReportThatCannotBeWrittenFails(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer full.Close()
	for _, args := range [][]string{
		{"--dry-run"},
		{"--dry-run", "--json"},
		{"--dry-run", "--keep-last", "1"},
		{"--delete-delay", "0"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			url := "file://" + t.TempDir()
			populate(t, openStore(t, url), 6, 2)
			cmd := exec.Command(binary, append(args, "--store", url)...)
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = full, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			require.True(t, errors.As(err, &ee), "exit 0 with its report lost; stderr %s", stderr.String())
			require.Equal(t, 1, ee.ExitCode(), stderr.String())
			require.Contains(t, stderr.String(), "no space left on device")
		})
	}
}
