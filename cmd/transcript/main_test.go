package main

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const fixtureV3 = "../../../shared/fixtures/pi-v3-browse-session.jsonl"
const fixtureV1 = "../../../shared/fixtures/pi-v1-prompt-cache-replay.jsonl"

// cli runs the command line with injected streams and returns stdout, stderr and
// the exit code main would use.
func cli(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, &out, &errOut)
	code := exitCode(err, &errOut)
	return out.String(), errOut.String(), code
}

func fixture(t *testing.T, path string) string {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		t.Skipf("fixture %s not present: %v", path, err)
	}
	return path
}

// snapshot maps every file under dir to its content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	}))
	return out
}

func TestRun_Usage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"no command", nil, 2, "Usage: transcript COMMAND"},
		{"help", []string{"help"}, 0, "Commands:"},
		{"unknown", []string{"frobnicate"}, 2, ""},
		{"bad flag", []string{"ls", "--nope"}, 2, ""},
		{"command help", []string{"verify", "-h"}, 0, ""},
		{"cat needs a session", []string{"cat"}, 2, ""},
		{"bad ref", []string{"cat", "--store", "mem://", "a/b/c/d"}, 2, ""},
		{"bad store", []string{"ls", "--store", "ftp://x"}, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, code := cli(t, tt.args...)
			require.Equal(t, tt.code, code)
			require.Contains(t, out, tt.out)
		})
	}
}

func TestRun_ImportExportContext(t *testing.T) {
	v3, v1 := fixture(t, fixtureV3), fixture(t, fixtureV1)
	dir := t.TempDir()
	store := "file://" + filepath.Join(dir, "bucket")

	out, _, code := cli(t, "import", "--store", store, "--agent", "coder", v3, v1)
	require.Equal(t, 0, code)
	require.Contains(t, out, "default/coder/6d4c2f18-9a3b-4e57-8c21-2f5a9d0b7e64\t12 entries")
	require.Contains(t, out, "default/coder/replay-session-1\t6 entries")

	// Export of an imported v3 file is byte-identical to the file.
	out, _, code = cli(t, "export", "--store", store, "coder/6d4c2f18-9a3b-4e57-8c21-2f5a9d0b7e64")
	require.Equal(t, 0, code)
	want, err := os.ReadFile(v3)
	require.NoError(t, err)
	require.Equal(t, string(want), out)

	// The context from the store equals the context of the file itself.
	fromStore, _, code := cli(t, "context", "--store", store, "default/coder/6d4c2f18-9a3b-4e57-8c21-2f5a9d0b7e64")
	require.Equal(t, 0, code)
	fromFile, _, code := cli(t, "context", "--file", v3)
	require.Equal(t, 0, code)
	require.Equal(t, fromFile, fromStore)
	require.Contains(t, fromFile, `"role":"compactionSummary"`)

	before := snapshot(t, dir)
	for _, args := range [][]string{
		{"ls", "--store", store},
		{"ls", "--store", store, "default/coder"},
		{"ls", "--store", store, "--json", "default/coder/replay-session-1"},
		{"cat", "--store", store, "default/coder/replay-session-1"},
		{"verify", "--store", store},
		{"stats", "--store", store, "--json"},
		{"export", "--store", store, "default/coder/replay-session-1"},
		{"context", "--store", store, "default/coder/replay-session-1"},
	} {
		_, errOut, code := cli(t, args...)
		require.Equal(t, 0, code, "%v: %s", args, errOut)
	}
	require.Equal(t, before, snapshot(t, dir), "read-only commands change nothing")

	out, _, code = cli(t, "ls", "--store", store, "default/coder")
	require.Equal(t, 0, code)
	require.Equal(t, "6d4c2f18-9a3b-4e57-8c21-2f5a9d0b7e64\nreplay-session-1\n", out)
	out, _, _ = cli(t, "cat", "--store", store, "default/coder/replay-session-1")
	require.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 7, "header + 6 entries")
}

func TestRun_VerifyFindsCorruption(t *testing.T) {
	v3 := fixture(t, fixtureV3)
	dir := t.TempDir()
	store := "file://" + dir
	_, _, code := cli(t, "import", "--store", store, "--agent", "coder", "--session", "s1", v3)
	require.Equal(t, 0, code)
	var seg string
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if strings.HasSuffix(p, ".jsonl.zst") {
			seg = p
		}
		return err
	}))
	b, err := os.ReadFile(seg)
	require.NoError(t, err)
	b[len(b)-5] ^= 0xff
	require.NoError(t, os.WriteFile(seg, b, 0o644))

	out, _, code := cli(t, "verify", "--store", store)
	require.Equal(t, 1, code)
	require.Contains(t, out, "default/coder/s1")
	require.Contains(t, out, "1 problems in 1 segments of 1 sessions")
}

func TestRun_RestoreAndDemo(t *testing.T) {
	dir := t.TempDir()
	store := "file://" + filepath.Join(dir, "bucket")
	root := filepath.Join(dir, "local")
	out, errOut, code := cli(t, "demo", "--store", store, "--root", root, "--outbox", filepath.Join(dir, "outbox"), "--agent", "a1")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "its context matches")
	require.Contains(t, out, "3 segments uploaded")

	restored := filepath.Join(dir, "restored")
	out, errOut, code = cli(t, "restore", "--store", store, "--root", restored)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "\t8 entries\t")
	require.Contains(t, errOut, "restored 1, skipped 0, failed 0")
	// A second run skips what exists.
	_, errOut, code = cli(t, "restore", "--store", store, "--root", restored)
	require.Equal(t, 0, code)
	require.Contains(t, errOut, "restored 0, skipped 1, failed 0")

	orig := snapshot(t, root)
	got := snapshot(t, restored)
	require.Len(t, got, 2, "context and log file")
	for p, content := range orig {
		rel, err := filepath.Rel(root, p)
		require.NoError(t, err)
		require.Equal(t, content, got[filepath.Join(restored, rel)], rel)
	}
}
