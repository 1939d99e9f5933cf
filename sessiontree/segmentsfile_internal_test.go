package sessiontree

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
)

// A segments file reads back as written; a version 1 file gives its set without
// frontier or leaf; a malformed or damaged one is the empty file.
func TestSegmentsFile_RoundTrip(t *testing.T) {
	set := transcript.NewSegmentSet("L0/20261201T120000.000000000Z-w-0000000000000001-00000000000000aa.jsonl.zst")
	front := transcript.Origin{Key: "L0/20261201T120000.000000000Z-w-0000000000000001-00000000000000aa.jsonl.zst", Pos: 3}
	tests := []segmentsFile{
		{have: set, frontier: front, leaf: "a b\"c", leafKnown: true, sizes: "files 10 20"},
		{have: set, leafKnown: true, sizes: "files 1 2"},
		{have: set, sizes: "files 1 2"},
		{have: transcript.NewSegmentSet(), frontier: front, sizes: "files 0 0"},
	}
	for i, f := range tests {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.segments")
			require.NoError(t, writeSegmentsFile(path, f))
			got := readSegmentsFile(path)
			require.True(t, f.have.Equal(got.have))
			require.Equal(t, f.frontier, got.frontier)
			require.Equal(t, f.leaf, got.leaf)
			require.Equal(t, f.leafKnown, got.leafKnown)
			require.Equal(t, f.sizes, got.sizes)
		})
	}

	withSum := func(body string) string { return body + fmt.Sprintf("xxh64 %016x\n", xxhash.Sum64String(body)) }
	key := set.Keys()[0]
	raw := []struct {
		name    string
		content string
		wantLen int
	}{
		{"version 1", withSum("transcript-segments 1\nfiles 1 2\n" + key + "\n"), 1},
		{"version 2 without leaf line", withSum("transcript-segments 2\nfiles 1 2\nfrontier -\n" + key + "\n"), 0},
		{"bad frontier", withSum("transcript-segments 2\nfiles 1 2\nfrontier x y\nleaf ?\n" + key + "\n"), 0},
		{"bad leaf", withSum("transcript-segments 2\nfiles 1 2\nfrontier -\nleaf abc\n" + key + "\n"), 0},
		{"unknown version", withSum("transcript-segments 3\nfiles 1 2\nfrontier -\nleaf ?\n" + key + "\n"), 0},
		{"damaged", "transcript-segments 2\nfiles 1 2\nfrontier -\nleaf ?\n" + key + "\nxxh64 0000000000000000\n", 0},
	}
	for _, tt := range raw {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.segments")
			require.NoError(t, os.WriteFile(path, []byte(tt.content), 0o644))
			got := readSegmentsFile(path)
			require.Equal(t, tt.wantLen, got.have.Len())
			require.False(t, got.leafKnown)
			require.Equal(t, transcript.Origin{}, got.frontier)
		})
	}
}
