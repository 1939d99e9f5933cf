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

// A segments file reads back as written, with the origins of the origins file
// it names; a version 3 file gives the origins it holds inline; a version 1 or 2
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
			dir := t.TempDir()
			path, opath := filepath.Join(dir, "s.segments"), filepath.Join(dir, "s.origins")
			f.originsSize, f.originsSum = writeTestOrigins(t, opath, originLogOf(f.origins).pending)
			require.NoError(t, writeSegmentsFile(path, f))
			got := readSegmentsFile(path)
			require.False(t, got.withOrigins, "read from the origins file by loadOrigins")
			got.loadOrigins(opath)
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
		{"version 4 with inline origins", withSum("transcript-segments 4\nfiles 1 2\nleaf ?\n" + key + "\norigins\n"), 0},
		{"version 4 without origins line", withSum("transcript-segments 4\nfiles 1 2\nleaf ?\n" + key + "\n"), 0},
		{"version 4 bad origins line", withSum("transcript-segments 4\nfiles 1 2\nleaf ?\n" + key + "\norigins 12 xyz\n"), 0},
		{"version 4 line after origins", withSum("transcript-segments 4\nfiles 1 2\nleaf ?\norigins 21 0000000000000000\n" + key + "\n"), 0},
		{"unknown version", withSum("transcript-segments 5\nfiles 1 2\nleaf ?\n" + key + "\norigins 21 0000000000000000\n"), 0},
		{"damaged", "transcript-segments 3\nfiles 1 2\nleaf ?\n" + key + "\norigins\nxxh64 0000000000000000\n", 0},
	}
	for _, tt := range raw {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.segments")
			require.NoError(t, os.WriteFile(path, []byte(tt.content), 0o644))
			got := readSegmentsFile(path)
			require.Equal(t, tt.wantLen, got.have.Len())
			require.False(t, got.leafKnown)
			require.False(t, got.withOrigins, "only version 3 records origins inline")
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
	require.Equal(t, 2, strings.Count(string(l.pending), "at "))
	dir := t.TempDir()
	path, opath := filepath.Join(dir, "s.segments"), filepath.Join(dir, "s.origins")
	size, sum := writeTestOrigins(t, opath, l.pending)
	require.NoError(t, writeSegmentsFile(path, segmentsFile{have: transcript.NewSegmentSet(k1, k2), originsSize: size, originsSum: sum, sizes: "files 1 1"}))
	got := readSegmentsFile(path)
	got.loadOrigins(opath)
	require.True(t, got.withOrigins)
	require.Equal(t, []originRecord{
		{id: "a", origin: transcript.Origin{Key: k1, Pos: 1}, sum: 1},
		{id: "b", origin: transcript.Origin{Key: k1, Pos: 2}, sum: 2},
		{id: "a", origin: transcript.Origin{Key: k2, Pos: 0}, sum: 3},
	}, got.origins)
}

// writeTestOrigins writes an origins file at path holding records and returns
// its size and checksum, as a segments file names them.
func writeTestOrigins(t *testing.T, path string, records []byte) (int64, uint64) {
	data := append([]byte(originsHeader+"\n"), records...)
	require.NoError(t, writeOriginsFile(path, data, true))
	return int64(len(data)), xxhash.Sum64(data)
}

// A version 3 file (origins inline, as written before the origins file)
// gives its set, leaf and origins.
func TestSegmentsFile_Version3(t *testing.T) {
	k1 := "L0/20261201T120000.000000000Z-w-0000000000000001-00000000000000aa.jsonl.zst"
	body := "transcript-segments 3\nfiles 1 2\nleaf \"b\"\n" + k1 + "\norigins\nat " + k1 + "\n1 0000000000000007 \"b\"\n0 0000000000000000 \"c\"\n"
	path := filepath.Join(t.TempDir(), "s.segments")
	require.NoError(t, os.WriteFile(path, []byte(body+fmt.Sprintf("xxh64 %016x\n", xxhash.Sum64String(body))), 0o644))
	got := readSegmentsFile(path)
	got.loadOrigins(filepath.Join(t.TempDir(), "missing.origins"))
	require.True(t, got.withOrigins)
	require.Equal(t, 1, got.have.Len())
	require.Equal(t, "b", got.leaf)
	require.Equal(t, []originRecord{
		{id: "b", origin: transcript.Origin{Key: k1, Pos: 1}, sum: 7},
		{id: "c", origin: transcript.Origin{Key: k1, Pos: 0}, sum: 0},
	}, got.origins)
}
