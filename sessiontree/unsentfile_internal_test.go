package sessiontree

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/require"
)

func TestUnsentFile_RoundTrip(t *testing.T) {
	for _, r := range []unsentRecord{
		{ids: []string{}},
		{ids: []string{"a1b2c3d4"}},
		{headerUnsent: true, headerSum: 0x0123456789abcdef, ids: []string{"a", "b\n\"c\"", "ü\x00"}},
		{headerUnsent: true, ids: []string{}},
	} {
		data := encodeUnsent(r)
		got, err := decodeUnsent(data)
		require.NoError(t, err)
		require.Equal(t, r, got)
	}
}

func TestUnsentFile_Rejects(t *testing.T) {
	valid := encodeUnsent(unsentRecord{headerUnsent: true, headerSum: 7, ids: []string{"x"}})
	withSum := func(body string) []byte { return append([]byte(body), sumLine([]byte(body))...) }
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"no final newline", valid[:len(valid)-1]},
		{"no checksum", []byte("transcript-unsent 1\nheader sent\n")},
		{"bad checksum", bytes.Replace(valid, []byte("\"x\""), []byte("\"y\""), 1)},
		{"unknown version", withSum("transcript-unsent 2\nheader sent\n")},
		{"not an unsent file", withSum("transcript-segments 4\nheader sent\n")},
		{"no header line", withSum("transcript-unsent 1\n")},
		{"bad header line", withSum("transcript-unsent 1\nheader maybe\n")},
		{"short header sum", withSum("transcript-unsent 1\nheader unsent 7\n")},
		{"upper-case header sum", withSum("transcript-unsent 1\nheader unsent 000000000000000A\n")},
		{"unquoted id", withSum("transcript-unsent 1\nheader sent\nx\n")},
		{"empty id", withSum("transcript-unsent 1\nheader sent\n\"\"\n")},
		{"id not quoted canonically", withSum("transcript-unsent 1\nheader sent\n\"\\x41\"\n")},
		{"blank line", withSum("transcript-unsent 1\nheader sent\n\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeUnsent(tc.data)
			require.ErrorIs(t, err, ErrUnsentFile)
		})
	}
}

// sumLine is the checksum line of an unsent file whose other lines are body.
func sumLine(body []byte) []byte { return fmt.Appendf(nil, "xxh64 %016x\n", xxhash.Sum64(body)) }

// TestLoad_UnsentIDsNotInFiles: a record made durable by a flush that crashed
// before its local write names entries the local files lack: they were never
// acknowledged, and Load leaves them out instead of failing.
func TestLoad_UnsentIDsNotInFiles(t *testing.T) {
	ctx := context.Background()
	cfg := Config{Root: t.TempDir(), NoSync: true}
	tr, err := New(cfg, Identity{}, "a", "s", HeaderOptions{})
	require.NoError(t, err)
	e, err := tr.AppendMessage([]byte(`{"role":"user","content":"hi","timestamp":1}`))
	require.NoError(t, err)
	require.NoError(t, tr.Flush(ctx))
	require.NoError(t, os.WriteFile(tr.files.Unsent, encodeUnsent(unsentRecord{ids: []string{"gone", e.ID()}}), 0o644))

	tr2, _, err := Load(ctx, cfg, Identity{}, "a", "s")
	require.NoError(t, err)
	require.Equal(t, []int{0}, tr2.pendingUpload)
	require.Zero(t, tr2.flags[0]&uploaded)
	require.True(t, tr2.headerUploaded, "the record says the header was handed over")
}

// FuzzDecodeUnsent: the decoder never panics, and what it accepts is exactly
// what the encoder writes for the record it returns. Each input is tried as it
// is and with a valid checksum line after it, so that the fuzzer reaches the
// parsing of the lines.
func FuzzDecodeUnsent(f *testing.F) {
	f.Add(encodeUnsent(unsentRecord{ids: []string{}}))
	f.Add(encodeUnsent(unsentRecord{headerUnsent: true, headerSum: 42, ids: []string{"a1b2c3d4", "e5f6a7b8"}}))
	f.Add([]byte("transcript-unsent 1\nheader sent\n\"x\"\nxxh64 0000000000000000\n"))
	f.Add([]byte("transcript-unsent 1\nheader unsent 000000000000002a\n\"a\\nb\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, d := range [][]byte{data, append(bytes.Clone(data), sumLine(data)...)} {
			r, err := decodeUnsent(d)
			if err != nil {
				require.ErrorIs(t, err, ErrUnsentFile)
				continue
			}
			require.Equal(t, d, encodeUnsent(r))
		}
	})
}
