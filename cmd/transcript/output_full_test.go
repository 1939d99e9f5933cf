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

// TestCLI_OutputThatCannotBeWrittenFails: a command whose results could not be
// written to stdout (here /dev/full: a full disk under `transcript verify >
// report.txt`) exits 1 naming the write error, whatever it read. tree and
// verify used to exit 0 with their output lost: a script saw a clean verify and
// an empty report.
func TestCLI_OutputThatCannotBeWrittenFails(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer full.Close()
	store, _ := storeWithSessions(t, 2)
	sel := []string{"--agent", "a", "--session", "s000"}
	for _, args := range [][]string{
		append([]string{"tree"}, sel...),
		append([]string{"cat"}, sel...),
		append([]string{"export"}, sel...),
		append([]string{"context"}, sel...),
		{"verify"},
		{"verify", "--json"},
		{"ls"},
		{"ls", "--segments"},
		{"stats"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			cmd := exec.Command(binary, append(args, "--store", store)...)
			cmd.Env = append(os.Environ(), "TRANSCRIPT_STORE=")
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = full, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			require.True(t, errors.As(err, &ee), "exit 0 with its output lost; stderr %s", stderr.String())
			require.Equal(t, 1, ee.ExitCode(), stderr.String())
			require.Contains(t, stderr.String(), "no space left on device")
		})
	}
}
