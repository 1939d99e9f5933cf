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

// TestJob_MissingTargetsAreNotFound: a namespace, agent or session named that
// does not exist is "not found" with exit 1, as in the transcript command, not a
// run that scans 0 sessions and exits 0; nothing is written. A bucket that does
// not exist is "not found" too, also with create=true.
func TestJob_MissingTargetsAreNotFound(t *testing.T) {
	for name, fresh := range stores() {
		t.Run(name, func(t *testing.T) {
			url := fresh(t)
			s := openStore(t, url)
			populate(t, s, 3)
			before := snapshot(t, s.Bucket())
			tests := []struct {
				name   string
				args   []string
				stderr string
			}{
				{"namespace", []string{"--ns", "nope"}, `namespace "nope": not found (the store has one other namespace: --ns acme)`},
				{"agent in a namespace", []string{"--ns", "acme", "--agent", "nobody"}, `agent "nobody" in namespace "acme": not found`},
				{"agent in any namespace", []string{"--agent", "nobody"}, `agent "nobody" in any namespace: not found`},
				{"session", []string{"--ns", "acme", "--agent", "coder", "--session", "nope"}, "session acme/coder/nope: not found"},
				{"session in any namespace", []string{"--agent", "coder", "--session", "nope"}, `session "nope" of agent "coder" in any namespace: not found`},
				{"dry run of a missing session", []string{"--dry-run", "--ns", "acme", "--agent", "coder", "--session", "nope"}, "session acme/coder/nope: not found"},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					r := runBinary(t, context.Background(), append([]string{"--store", url, "--json"}, tt.args...)...)
					require.Equal(t, 1, r.code, "stdout %s\nstderr %s", r.stdout, r.stderr)
					require.Empty(t, r.stdout)
					require.Equal(t, "Error: "+tt.stderr+"\n", r.stderr)
				})
			}
			require.Equal(t, before, snapshot(t, s.Bucket()), "nothing written")
		})
	}
	t.Run("missing bucket", func(t *testing.T) {
		url := stores()["minio"](t) // create=true, which the job ignores
		r := runBinary(t, context.Background(), "--store", url)
		require.Equal(t, 1, r.code, r.stderr)
		require.Regexp(t, `^Error: store s3://\S+: bucket "[^"]+": not found\n$`, r.stderr)
	})
}
