package sessiontree

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
)

// A segments file reads back as written, origins included; a version 1 or 2
// file gives its set (and leaf) without origins; a malformed or damaged one is
// the empty file.
func TestSegmentsFile_RoundTrip(t *testing.T) {
	set := transcript.NewSegmentSet("L0/20261201T120000.000000000Z-w-0000000000000001-00000000000000aa.jsonl.zst")
	k1 := "L0/20261201T120000.000000000Z-w-0000000000000001-00000000000000aa.jsonl.zst"
	k2 := "L0/20261201T110000.000000000Z-v-0000000000000001-00000000000000bb.jsonl.zst"
	origins := []originRecord{
		{id: "b", origin: transcript.Origin{Key: k1, Pos: 1}, sum: 7},
		{id: "a b\"c", origin: transcript.Origin{Key: k2, Pos: 3}, sum: 1 << 63},
		{id: "c", origin: transcript.Origin{Key: k1, Pos: 0}, sum: 0},
	}
	tests := []segmentsFile{
		{have: set, origins: origins, withOrigins: true, leaf: "a b\"c", leafKnown: true, sizes: "files 10 20"},
		{have: set, withOrigins: true, leafKnown: true, sizes: "files 1 2"},
		{have: set, withOrigins: true, sizes: "files 1 2"},
		{have: transcript.NewSegmentSet(), origins: origins[:1], withOrigins: true, sizes: "files 0 0"},
	}
	for i, f := range tests {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.segments")
			f.originText = originLogOf(f.origins).text
			require.NoError(t, writeSegmentsFile(path, f))
			got := readSegmentsFile(path)
			require.True(t, f.have.Equal(got.have))
			require.True(t, got.withOrigins)
			require.ElementsMatch(t, f.origins, got.origins)
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
		{"version 2", withSum("transcript-segments 2\nfiles 1 2\nfrontier 3 " + key + "\nleaf ?\n" + key + "\n"), 1},
		{"version 2 without leaf line", withSum("transcript-segments 2\nfiles 1 2\nfrontier -\n" + key + "\n"), 0},
		{"bad leaf", withSum("transcript-segments 2\nfiles 1 2\nfrontier -\nleaf abc\n" + key + "\n"), 0},
		{"version 3 without origins", withSum("transcript-segments 3\nfiles 1 2\nleaf ?\n" + key + "\n"), 0},
		{"origin before its key", withSum("transcript-segments 3\nfiles 1 2\nleaf ?\n" + key + "\norigins\n0 00 \"a\"\n"), 0},
		{"bad origin", withSum("transcript-segments 3\nfiles 1 2\nleaf ?\n" + key + "\norigins\nat " + key + "\n0 zz \"a\"\n"), 0},
		{"unknown version", withSum("transcript-segments 4\nfiles 1 2\nleaf ?\n" + key + "\norigins\n"), 0},
		{"damaged", "transcript-segments 3\nfiles 1 2\nleaf ?\n" + key + "\norigins\nxxh64 0000000000000000\n", 0},
	}
	for _, tt := range raw {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.segments")
			require.NoError(t, os.WriteFile(path, []byte(tt.content), 0o644))
			got := readSegmentsFile(path)
			require.Equal(t, tt.wantLen, got.have.Len())
			require.False(t, got.leafKnown)
			require.False(t, got.withOrigins, "only version 3 records origins")
			require.Empty(t, got.origins)
		})
	}
}

// An origin log keeps records in the order added, a group line per change of
// origin key; read back, the later record of an id comes last (it counts).
func TestOriginLog_LaterRecordLast(t *testing.T) {
	k1 := "L0/20261201T120000.000000000Z-w-0000000000000001-00000000000000aa.jsonl.zst"
	k2 := "L0/20261201T110000.000000000Z-v-0000000000000001-00000000000000bb.jsonl.zst"
	var l originLog
	l.add("a", transcript.Origin{Key: k1, Pos: 1}, 1)
	l.add("b", transcript.Origin{Key: k1, Pos: 2}, 2)
	l.add("a", transcript.Origin{Key: k2, Pos: 0}, 3)
	require.Equal(t, 3, l.lines)
	require.Equal(t, 2, strings.Count(string(l.text), "at "))
	path := filepath.Join(t.TempDir(), "s.segments")
	require.NoError(t, writeSegmentsFile(path, segmentsFile{have: transcript.NewSegmentSet(k1, k2), withOrigins: true, originText: l.text, sizes: "files 1 1"}))
	got := readSegmentsFile(path)
	require.True(t, got.withOrigins)
	require.Equal(t, []originRecord{
		{id: "a", origin: transcript.Origin{Key: k1, Pos: 1}, sum: 1},
		{id: "b", origin: transcript.Origin{Key: k1, Pos: 2}, sum: 2},
		{id: "a", origin: transcript.Origin{Key: k2, Pos: 0}, sum: 3},
	}, got.origins)
}
