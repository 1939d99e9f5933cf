package fsutil_test

import (
	"bytes"
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

func TestSameContent(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), 10_000) // several 64 KiB pieces
	changed := bytes.Clone(big)
	changed[len(changed)-1] = 'x'
	a := write("a", big)
	tests := []struct {
		name    string
		b       string
		want    bool
		wantErr error
	}{
		{"same bytes", write("same", big), true, nil},
		{"last byte differs", write("changed", changed), false, nil},
		{"shorter", write("short", big[:len(big)-1]), false, nil},
		{"empty", write("empty", nil), false, nil},
		{"missing", filepath.Join(dir, "missing"), false, os.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := fsutil.SameContent(a, tt.b)
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}
