package segment_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/segment"
)

// TestSegment_ZstdCLI checks the promise that any standard zstd tool reads a
// segment: `zstd -dc` prints exactly the entries as JSONL and ignores the
// metadata frame. Skipped when zstd is not installed, except under CI=true.
func TestSegment_ZstdCLI(t *testing.T) {
	zstdBin, err := exec.LookPath("zstd")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("zstd command-line tool required in CI: %v", err)
		}
		t.Skipf("zstd command-line tool not installed: %v", err)
	}
	enc, _ := newCodec(t)
	// A small frame size cuts most cases into several zstd frames, which
	// zstd -dc must read as one stream.
	multi, err := segment.NewEncoder(segment.WithFrameSize(2048))
	require.NoError(t, err)
	defer multi.Close()
	cases := map[string][][]byte{
		"one":  {[]byte(`{"type":"session","id":"s"}`)},
		"many": makeEntries(200, 9),
		"binary-ish": {
			[]byte("{\"x\":\"\xff\xfe\x00\r\t\"}"),
			[]byte("  not json at all  "),
		},
	}
	for _, gc := range goldenCases() {
		cases["golden-"+gc.name] = gc.entries
	}
	for name, entries := range cases {
		for encName, enc := range map[string]*segment.Encoder{"": enc, "/multiframe": multi} {
			t.Run(name+encName, func(t *testing.T) {
				testZstdCLI(t, zstdBin, enc, entries)
			})
		}
	}
	// The golden files on disk, as an operator would meet them.
	for _, gc := range goldenCases() {
		out, err := exec.Command(zstdBin, "-dc", goldenPath(gc.name)).Output()
		require.NoError(t, err)
		require.Equal(t, joinJSONL(gc.entries), out)
	}
}

// testZstdCLI encodes entries with enc and checks that zstd -dc prints them
// as JSONL, from a file and from a pipe, and that zstd -t passes.
func testZstdCLI(t *testing.T, zstdBin string, enc *segment.Encoder, entries [][]byte) {
	data, _, err := enc.Encode(sampleMeta(), entries)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "seg"+".jsonl.zst")
	require.NoError(t, os.WriteFile(path, data, 0o644))

	out, err := exec.Command(zstdBin, "-dc", path).Output()
	require.NoError(t, err)
	require.Equal(t, joinJSONL(entries), out)

	cmd := exec.Command(zstdBin, "-dc")
	cmd.Stdin = bytes.NewReader(data)
	out, err = cmd.Output()
	require.NoError(t, err)
	require.Equal(t, joinJSONL(entries), out)

	// zstd's own integrity test passes too.
	require.NoError(t, exec.Command(zstdBin, "-tq", path).Run())
}
