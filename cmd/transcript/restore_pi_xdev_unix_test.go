//go:build unix

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRestore_PiLayoutFolderOnAnotherDisk: a Pi folder that is a symbolic link
// to a directory on another file system (a project's sessions kept on another
// disk, which Pi and follow take as a folder like any other) gets its files as
// well: restore builds them under --out, and a rename cannot move them across
// file systems, so they are copied there, dated and with Pi's mode, and leave
// nothing else behind.
func TestRestore_PiLayoutFolderOnAnotherDisk(t *testing.T) {
	out := filepath.Join(t.TempDir(), "sessions")
	require.NoError(t, os.MkdirAll(out, 0o755))
	disk, err := os.MkdirTemp("/dev/shm", "restore-pi-")
	if err != nil || device(t, disk) == device(t, out) {
		t.Skip("no second file system (/dev/shm) to put a folder on")
	}
	t.Cleanup(func() { _ = os.RemoveAll(disk) })
	require.NoError(t, os.Symlink(disk, filepath.Join(out, "--home-daniel-co-pilish--")))

	store := fileBackend().fresh(t)
	ok(t, "import", "--store", store, "--agent", "coder", "--session", "s1", fixtureV3)
	name := "2026-09-25T22-28-55-488Z_" + fixtureV3ID + ".jsonl"

	r := cli(t, "restore", "--layout", "pi", "--out", out, "--store", store)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "restored 1, skipped 0")
	want, err := os.ReadFile(fixtureV3)
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(disk, name))
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
	st, err := os.Stat(filepath.Join(disk, name))
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 9, 25, 22, 30, 6, 0, time.UTC), st.ModTime().UTC(), "dated by its newest entry")
	require.Equal(t, os.FileMode(0o644), st.Mode().Perm())
	left, err := os.ReadDir(disk)
	require.NoError(t, err)
	require.Len(t, left, 1, "no temp file left beside it")

	r = cli(t, "restore", "--layout", "pi", "--out", out, "--store", store)
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "restored 0, skipped 1")
}

// device is the file system (st_dev) holding path.
func device(t *testing.T, path string) uint64 {
	t.Helper()
	st, err := os.Stat(path)
	require.NoError(t, err)
	return uint64(st.Sys().(*syscall.Stat_t).Dev) //nolint:unconvert // int32 on some platforms
}
