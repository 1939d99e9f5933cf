//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRestore_RemovesDeadScratch: a restore removes the scratch directories
// that restores into the same --out left behind when they were killed (no
// lock, or a lock their process dropped by dying), and leaves alone those of
// restores still running (a flock held on the directory, or made by
// newScratch as a concurrent restore makes its own), a ".restore.new-*" just
// made, a symbolic link and what is not a scratch directory (a name
// os.MkdirTemp does not make).
func TestRestore_RemovesDeadScratch(t *testing.T) {
	store := fileBackend().fresh(t)
	ok(t, "import", "--store", store, "--agent", "coder", "--session", "s1", fixtureV3)
	for _, layout := range []string{layoutSessionTree, layoutPi} {
		t.Run(layout, func(t *testing.T) {
			out := t.TempDir()
			mk := func(name string) string {
				dir := filepath.Join(out, name)
				require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "pi-1.jsonl"), []byte("partial\n"), 0o644))
				return dir
			}
			lock := func(dir string) *os.File {
				f, err := os.Open(dir)
				require.NoError(t, err)
				require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
				return f
			}
			running, done, err := newScratch(out) // a concurrent restore's own (made first: it too removes dead ones)
			require.NoError(t, err)
			defer done()
			require.NoError(t, os.WriteFile(filepath.Join(running, "pi-2.jsonl"), []byte("partial\n"), 0o644))
			killed := mk(".restore-1001") // kill -9 of an older restore: no lock
			died := mk(".restore-1002")   // its owner locked it, then died
			require.NoError(t, lock(died).Close())
			held := mk(".restore-1003") // its owner is running
			holder := lock(held)
			defer holder.Close()
			stale := mk(scratchNewPrefix + "1") // killed between making and locking it
			old := time.Now().Add(-2 * scratchNewGrace)
			require.NoError(t, os.Chtimes(stale, old, old))
			fresh := mk(scratchNewPrefix + "2") // being made by a restore this instant
			other := mk(".restorex")            // not a scratch directory
			named := mk(".restore-old")         // nor a folder a user named so
			target := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(target, "keep"), nil, 0o644))
			link := filepath.Join(out, ".restore-link")
			require.NoError(t, os.Symlink(target, link))

			r := cli(t, "restore", "--layout", layout, "--out", out, "--store", store)
			require.Equal(t, 0, r.code, r.stdout+r.stderr)
			require.Contains(t, r.stdout, "restored 1")
			for _, dir := range []string{killed, died, stale} {
				require.NoDirExists(t, dir)
			}
			for _, f := range []string{
				filepath.Join(held, "sub", "pi-1.jsonl"), filepath.Join(running, "pi-2.jsonl"),
				filepath.Join(fresh, "sub", "pi-1.jsonl"), filepath.Join(other, "sub", "pi-1.jsonl"),
				filepath.Join(named, "sub", "pi-1.jsonl"),
				filepath.Join(target, "keep"),
			} {
				require.FileExists(t, f)
			}
			_, err = os.Lstat(link)
			require.NoError(t, err)
			require.ElementsMatch(t, []string{".restore-1003", ".restore-link", filepath.Base(running), ".restore.new-2", ".restorex", ".restore-old"}, hiddenNames(t, out),
				"the run removed its own scratch")

			// Once their owners are gone, the next run removes them.
			require.NoError(t, holder.Close())
			done()
			r = cli(t, "restore", "--layout", layout, "--out", out, "--store", store)
			require.Equal(t, 0, r.code, r.stdout+r.stderr)
			require.NoDirExists(t, held)
			require.ElementsMatch(t, []string{".restore-link", ".restore.new-2", ".restorex", ".restore-old"}, hiddenNames(t, out))
		})
	}
}

// hiddenNames lists the names in dir that start with ".".
func hiddenNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	return names
}
