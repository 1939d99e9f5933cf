package fsutil_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/fsutil"
)

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.jsonl")
	write := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	require.NoError(t, fsutil.WriteFileAtomic(path, false, write("one\n")))
	require.NoError(t, fsutil.WriteFileAtomic(path, false, write("two\n")))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "two\n", string(b))

	// A writer that fails half way leaves the old file and no temp file behind.
	boom := errors.New("disk full")
	err = fsutil.WriteFileAtomic(path, false, func(w io.Writer) error {
		_, _ = io.WriteString(w, "thr")
		return boom
	})
	require.ErrorIs(t, err, boom)
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "two\n", string(b))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)

	require.Error(t, fsutil.WriteFileAtomic(filepath.Join(dir, "missing", "f"), false, write("x")))
	require.Error(t, fsutil.SyncDir(filepath.Join(dir, "missing")))
}
