package filebucket

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// TestMkdirError: an EEXIST or ENOTDIR from MkdirAll is an invalid key only
// when an object stands where the key wants a directory. When no element of the
// path is an object (another write created a directory and a Delete pruned it
// before MkdirAll checked it), the write starts over (fs.ErrNotExist): as an
// invalid key, the mirror quarantined the segment, and its session stuck.
func TestMkdirError(t *testing.T) {
	eexist := &fs.PathError{Op: "mkdir", Err: syscall.EEXIST}
	enotdir := &fs.PathError{Op: "mkdir", Err: syscall.ENOTDIR}
	cases := []struct {
		name    string
		setup   func(t *testing.T, root string) // what exists when MkdirAll's error is looked at
		err     error
		invalid bool
	}{
		{"EEXIST, directory pruned meanwhile", func(*testing.T, string) {}, eexist, false},
		{"EEXIST, parent pruned meanwhile", func(t *testing.T, root string) {
			require.NoError(t, os.MkdirAll(filepath.Join(root, "ns"), 0o755))
		}, eexist, false},
		{"ENOTDIR, no object on the path", func(*testing.T, string) {}, enotdir, false},
		{"ENOTDIR, an object is a parent", func(t *testing.T, root string) {
			require.NoError(t, os.MkdirAll(filepath.Join(root, "ns"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(root, "ns", "a"), []byte("x"), 0o644))
		}, enotdir, true},
		{"EEXIST, the directory itself is an object", func(t *testing.T, root string) {
			require.NoError(t, os.MkdirAll(filepath.Join(root, "ns", "a"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(root, "ns", "a", "L0"), []byte("x"), 0o644))
		}, eexist, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := New(t.TempDir())
			require.NoError(t, err)
			tc.setup(t, b.root)
			got := b.mkdirError(filepath.Join(b.root, "ns", "a", "L0"), tc.err)
			if tc.invalid {
				require.ErrorIs(t, got, bucket.ErrInvalidKey)
				return
			}
			require.NotErrorIs(t, got, bucket.ErrInvalidKey)
			require.ErrorIs(t, got, fs.ErrNotExist, "createTemp starts over")
		})
	}
	t.Run("other errors pass through", func(t *testing.T) {
		b, err := New(t.TempDir())
		require.NoError(t, err)
		perm := &fs.PathError{Op: "mkdir", Err: syscall.EACCES}
		require.Equal(t, error(perm), b.mkdirError(filepath.Join(b.root, "x"), perm))
	})
}
