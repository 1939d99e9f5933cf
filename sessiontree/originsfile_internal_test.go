package sessiontree

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
)

// The origins file is read only up to the length the segments file names, and
// only if those bytes have the checksum named with them: a tail beyond (an
// append whose segments file was never written) is ignored, whatever it says;
// a file missing, shorter, changed or without its header gives no origins.
func TestReadOriginsFile_Damage(t *testing.T) {
	k1 := "L0/20261201T120000.000000000Z-w-0000000000000001-00000000000000aa.jsonl.zst"
	k0 := "L0/20261201T100000.000000000Z-v-0000000000000001-00000000000000bb.jsonl.zst"
	want := []originRecord{
		{id: "a", origin: transcript.Origin{Key: k1, Pos: 0}, sum: 1},
		{id: "b", origin: transcript.Origin{Key: k1, Pos: 1}, sum: 2},
	}
	l := originLogOf(want)
	good := append([]byte(originsHeader+"\n"), l.pending...)
	// A later record of "a" that would count if it were read.
	var later originLog
	later.add("a", transcript.Origin{Key: k0, Pos: 0}, 1)
	tests := []struct {
		name   string
		damage func(data []byte) []byte // nil: the file is removed
		ok     bool
	}{
		{"as written", func(d []byte) []byte { return d }, true},
		{"torn tail", func(d []byte) []byte { return append(d, "at L0/2026"...) }, true},
		{"longer than recorded", func(d []byte) []byte { return append(d, later.pending...) }, true},
		{"missing", nil, false},
		{"cut short", func(d []byte) []byte { return d[:len(d)-5] }, false},
		{"empty", func([]byte) []byte { return nil }, false},
		{"changed", func(d []byte) []byte { d[len(d)-3] ^= 1; return d }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.origins")
			if tt.damage != nil {
				require.NoError(t, os.WriteFile(path, tt.damage(append([]byte(nil), good...)), 0o644))
			}
			got, ok := readOriginsFile(path, int64(len(good)), xxhash.Sum64(good))
			require.Equal(t, tt.ok, ok)
			if tt.ok {
				require.Equal(t, want, got)
			} else {
				require.Empty(t, got)
			}
		})
	}

	t.Run("without header", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "s.origins")
		require.NoError(t, os.WriteFile(path, l.pending, 0o644))
		_, ok := readOriginsFile(path, int64(len(l.pending)), xxhash.Sum64(l.pending))
		require.False(t, ok)
	})
}

// An append cuts what follows the length the tree wrote (a torn tail) before it
// writes; a file shorter than that length is not the one the tree wrote.
func TestAppendOrigins(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.origins")
	head := []byte(originsHeader + "\nat k\n0 0000000000000001 \"a\"\n")
	require.NoError(t, os.WriteFile(path, append(append([]byte(nil), head...), "1 00"...), 0o644))
	rec := []byte("1 0000000000000002 \"b\"\n")
	require.NoError(t, appendOrigins(path, int64(len(head)), rec, false))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(head)+string(rec), string(data))

	require.ErrorIs(t, appendOrigins(path, int64(len(data))+1, rec, true), errOriginsChanged)
	require.Error(t, appendOrigins(filepath.Join(t.TempDir(), "missing"), 0, rec, true))
}
