package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestJob_MissingStoreIsNotFound: the job never creates a store; a directory that
// does not exist, named or the default ./transcripts, is "not found" (exit 1).
func TestJob_MissingStoreIsNotFound(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nonexistent3")
	r := runBinary(t, context.Background(), "--store", "file://"+missing)
	require.Equal(t, 1, r.code)
	require.Empty(t, r.stdout)
	require.Equal(t, "Error: store file://"+missing+" not found: no directory "+missing+"\n", r.stderr)
	require.NoDirExists(t, missing)

	wd := t.TempDir()
	cmd := exec.Command(binary)
	cmd.Dir = wd
	cmd.Env = append(os.Environ(), "TRANSCRIPT_STORE=")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, 1, ee.ExitCode())
	require.Contains(t, string(out), "store file://./transcripts not found")
	entries, err := os.ReadDir(wd)
	require.NoError(t, err)
	require.Empty(t, entries, "the default store is not created")
}

// TestJob_SharedStoreFlags: TRANSCRIPT_STORE sets the store, and mistyped flags get
// the suggestion every command gives.
func TestJob_SharedStoreFlags(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(binary, "--json")
	cmd.Env = append(os.Environ(), "TRANSCRIPT_STORE=file://"+dir)
	out, err := cmd.Output()
	require.NoError(t, err)
	require.Contains(t, string(out), `"sessionsScanned":0`)

	r := runBinary(t, context.Background(), "--store", "file://"+dir, "--min-segment", "3")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, "unknown flag --min-segment (did you mean --min-segments?)")
	r = runBinary(t, context.Background(), "--store", "ftp://x")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.stderr, `unknown scheme "ftp"`)
}
