package sessiontree

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLines_OneBufferAtItsSize checks that a flush's JSONL is built in one
// allocation of exactly its size (an imported session's first flush writes
// hundreds of megabytes; growing the buffer would copy and hold it twice).
func TestLines_OneBufferAtItsSize(t *testing.T) {
	var file strings.Builder
	file.WriteString(`{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"}` + "\n")
	parent := "null"
	for i := range 300 {
		fmt.Fprintf(&file, `{"type":"message","id":"e%d","parentId":%s,"timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"%s"}}`+"\n",
			i, parent, strings.Repeat("x", i%50))
		parent = fmt.Sprintf(`"e%d"`, i)
	}
	tree, _, err := Import(Config{Root: t.TempDir(), NoSync: true}, Identity{}, "a", "s", strings.NewReader(file.String()))
	require.NoError(t, err)
	all := make([]int, len(tree.entries))
	for i := range all {
		all[i] = i
	}
	for _, tc := range []struct {
		header bool
		idx    []int
	}{{true, all}, {false, all}, {true, nil}, {false, all[10:20]}} {
		buf := tree.lines(tc.header, tc.idx)
		require.Equal(t, len(buf), cap(buf), "made at its size")
		var want []byte
		if tc.header {
			want = append(append(want, tree.header.Raw()...), '\n')
		}
		for _, i := range tc.idx {
			want = append(append(want, tree.entries[i].Raw()...), '\n')
		}
		require.Equal(t, want, buf)
		require.InDelta(t, 1, testing.AllocsPerRun(5, func() { tree.lines(tc.header, tc.idx) }), 0, "one allocation")
	}
	require.Equal(t, file.String(), string(tree.lines(true, all)))
}

// TestReadAll_SizesFromTheFile checks that a regular file is read into a buffer
// made at its size, and that other readers still read to the end.
func TestReadAll_SizesFromTheFile(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef\n"), 100_000) // 1.7 MB
	path := filepath.Join(t.TempDir(), "s.jsonl")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	got, err := readAll(f)
	require.NoError(t, err)
	require.Equal(t, data, got)
	require.Less(t, cap(got), len(data)+len(data)/64, "a buffer of the file's size")
	// One buffer, not one per step of growth (io.ReadAll makes about 20 here);
	// opening and stating the file make the rest.
	allocs := testing.AllocsPerRun(5, func() {
		f, err := os.Open(path)
		require.NoError(t, err)
		defer f.Close()
		_, err = readAll(f)
		require.NoError(t, err)
	})
	require.LessOrEqual(t, allocs, 8.0)

	got, err = readAll(bytes.NewReader(data))
	require.NoError(t, err)
	require.Equal(t, data, got)
	got, err = readAll(strings.NewReader(""))
	require.NoError(t, err)
	require.Empty(t, got)
}
