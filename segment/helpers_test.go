package segment_test

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/segment"
)

// Offsets of the documented v1 layout (FORMAT.md), counted from the start of
// the object. Tests patch fields through them, so they double as a check that
// FORMAT.md is right.
const (
	offFrameMagic  = 0
	offFrameLen    = 4
	offMetaMagic   = 8
	offVersion     = 12
	offLevel       = 14
	offReserved    = 15
	offSeq         = 16
	offEntryCount  = 24
	offInputCount  = 28
	offMinTime     = 32
	offMaxTime     = 40
	offRawLen      = 48
	offChecksum    = 56
	offPayloadLen  = 64
	offStrings     = 72
	metaChecksumSz = 8
)

var words = strings.Fields(`the a tool call result file read write edit bash grep
	function return error value session tree entry parent compaction summary model
	assistant user message thinking content text segment bucket replica flush test
	go build run main package import struct interface slice map channel context`)

// makeEntries returns n realistic Pi-style JSON entries of roughly 300-2000
// bytes, deterministic for a given seed.
func makeEntries(n int, seed uint64) [][]byte {
	r := rand.New(rand.NewPCG(seed, 42))
	base := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	entries := make([][]byte, n)
	parent := "null"
	for i := range entries {
		id := fmt.Sprintf("%08x", r.Uint32())
		var text strings.Builder
		target := 250 + r.IntN(1700)
		for text.Len() < target {
			text.WriteString(words[r.IntN(len(words))])
			text.WriteByte(' ')
		}
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		ts := base.Add(time.Duration(i) * 1500 * time.Millisecond).Format(time.RFC3339Nano)
		entries[i] = fmt.Appendf(nil,
			`{"type":"message","id":%q,"parentId":%s,"timestamp":%q,"message":{"role":%q,"content":[{"type":"text","text":%q}]}}`,
			id, parent, ts, role, text.String())
		parent = fmt.Sprintf("%q", id)
	}
	return entries
}

func rawSize(entries [][]byte) int64 {
	var n int64
	for _, e := range entries {
		n += int64(len(e)) + 1
	}
	return n
}

func joinJSONL(entries [][]byte) []byte {
	var b []byte
	for _, e := range entries {
		b = append(b, e...)
		b = append(b, '\n')
	}
	return b
}

// reseal recomputes the metadata checksum of seg in place after a test
// patched a field, so the patched field itself is what gets checked.
func reseal(seg []byte) {
	n := 8 + int(binary.LittleEndian.Uint32(seg[offFrameLen:]))
	binary.LittleEndian.PutUint64(seg[n-metaChecksumSz:], xxhash.Sum64(seg[:n-metaChecksumSz]))
}

func metaLen(t testing.TB, seg []byte) int {
	t.Helper()
	n, err := segment.MetaSize(seg)
	require.NoError(t, err)
	return n
}

func newCodec(t testing.TB, dopts ...segment.DecoderOption) (*segment.Encoder, *segment.Decoder) {
	t.Helper()
	enc, err := segment.NewEncoder()
	require.NoError(t, err)
	dec, err := segment.NewDecoder(dopts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, enc.Close())
		require.NoError(t, dec.Close())
	})
	return enc, dec
}

func sampleMeta() segment.Meta {
	return segment.Meta{
		WriterID: "replica-a",
		Seq:      7,
		FirstID:  "first",
		LastID:   "last",
		MinTime:  time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC),
		MaxTime:  time.Date(2025, 6, 1, 12, 5, 0, 123, time.UTC),
	}
}
