package segment

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/cespare/xxhash/v2"
	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
)

// sizedEntries returns one JSON-like entry per length in lens, each exactly
// that many bytes long.
func sizedEntries(lens ...int) [][]byte {
	entries := make([][]byte, len(lens))
	for i, n := range lens {
		e := fmt.Appendf(nil, `{"id":"e%d","text":"`, i)
		for len(e) < n-2 {
			e = append(e, "lorem ipsum dolor sit amet "[len(e)%27])
		}
		entries[i] = append(e[:n-2], `"}`...)
	}
	return entries
}

func repeatLen(n, l int) []int {
	lens := make([]int, n)
	for i := range lens {
		lens[i] = l
	}
	return lens
}

func newTestCodec(t *testing.T, frameSize int) (*Encoder, *Decoder) {
	t.Helper()
	enc, err := NewEncoder(WithFrameSize(frameSize))
	require.NoError(t, err)
	dec, err := NewDecoder()
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, enc.Close())
		require.NoError(t, dec.Close())
	})
	return enc, dec
}

// TestEncode_FrameCuts encodes batches with frame sizes that give one frame,
// two, many, an entry longer than the frame size and entries exactly filling
// a frame. It walks the frames of each segment and checks that every frame is
// a whole number of entries, each within the frame size unless it holds a
// single longer entry, that each frame alone decompresses (with a plain zstd
// decoder) to its part of the JSONL, and that Decode takes the parallel path
// and returns the entries.
func TestEncode_FrameCuts(t *testing.T) {
	plain, err := zstd.NewReader(nil)
	require.NoError(t, err)
	defer plain.Close()
	tests := []struct {
		name      string
		lens      []int
		frameSize int
		want      []int // entries per frame
		// stream: more than one frame under 256 bytes, which zstd writes
		// without their content size, so Decode decodes them as one stream.
		stream bool
	}{
		{"one frame, below size", repeatLen(10, 100), 2000, []int{10}, false},
		{"one frame, exactly size", repeatLen(10, 99), 1000, []int{10}, false},
		{"two frames", repeatLen(10, 99), 500, []int{5, 5}, false},
		{"many frames", repeatLen(10, 299), 600, []int{2, 2, 2, 2, 2}, false},
		{"entries exactly filling frames", []int{99, 99, 299, 599, 99, 399}, 600, []int{3, 1, 2}, false},
		{"one more byte than a frame", []int{299, 299, 2}, 600, []int{2, 1}, false},
		{"entry longer than frame size", []int{300, 1000, 300, 298}, 600, []int{1, 1, 2}, false},
		{"long entries only", []int{1000, 1000, 1000}, 200, []int{1, 1, 1}, false},
		{"long entry last", []int{150, 150, 1000}, 400, []int{2, 1}, false},
		{"frame size 1", []int{3, 3, 3}, 1, []int{1, 1, 1}, true},
		{"last frame too small to declare its size", []int{150, 150, 300, 100}, 310, []int{2, 1, 1}, false},
		{"middle frame too small to declare its size", []int{1000, 100, 1000}, 310, []int{1, 1, 1}, false},
		{"default frame size", repeatLen(600, 3000), DefaultFrameSize, []int{349, 251}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			enc, dec := newTestCodec(t, tc.frameSize)
			entries := sizedEntries(tc.lens...)
			data, meta, err := enc.Encode(Meta{WriterID: "w"}, entries)
			require.NoError(t, err)
			payload := data[len(data)-int(meta.PayloadLen):]
			raw := bytes.Join(entries, []byte("\n"))
			raw = append(raw, '\n')

			spans, ok := splitFrames(payload, meta.RawLen)
			if tc.stream {
				require.False(t, ok)
			} else if len(tc.want) == 1 {
				require.False(t, ok)
				size, n, _, ok := parseFrame(payload)
				require.True(t, ok)
				require.Equal(t, len(payload), n)
				require.Equal(t, meta.RawLen, size)
			} else {
				require.True(t, ok)
				require.Len(t, spans, len(tc.want))
				next := 0 // index of the first entry of the frame
				for i, s := range spans {
					frame, err := plain.DecodeAll(payload[s.start:s.end], nil)
					require.NoError(t, err, "frame %d", i)
					require.Equal(t, raw[s.out:s.out+s.size], frame, "frame %d", i)
					want := bytes.Join(entries[next:next+tc.want[i]], []byte("\n"))
					require.Equal(t, string(want)+"\n", string(frame), "frame %d holds whole entries", i)
					if tc.want[i] > 1 {
						require.LessOrEqual(t, s.size, tc.frameSize, "frame %d", i)
					}
					next += tc.want[i]
				}
				require.Equal(t, len(entries), next)
				buf := make([]byte, meta.RawLen)
				require.True(t, dec.decodeFrames(payload, spans, buf, nil), "parallel path taken")
				require.Equal(t, raw, buf)
			}

			seg, err := dec.Decode(data)
			require.NoError(t, err)
			require.Equal(t, entries, seg.Entries)
			require.Equal(t, meta, seg.Meta)
		})
	}
}

// TestParseFrame checks the frame walker on hand-made frame headers.
func TestParseFrame(t *testing.T) {
	magic := []byte{0x28, 0xb5, 0x2f, 0xfd}
	frame := func(parts ...[]byte) []byte { return bytes.Join(append([][]byte{magic}, parts...), nil) }
	b := func(v ...byte) []byte { return v }
	// block header: last flag, type, size.
	block := func(last bool, typ, size int) []byte {
		h := uint32(size)<<3 | uint32(typ)<<1
		if last {
			h |= 1
		}
		return []byte{byte(h), byte(h >> 8), byte(h >> 16)}
	}
	raw5 := append(block(true, blockRaw, 5), "hello"...)
	tests := []struct {
		name string
		in   []byte
		size uint64
		n    int // 0: not ok
	}{
		{"single segment, 1-byte size, raw block", frame(b(0x20, 5), raw5), 5, 14},
		{"window descriptor, 2-byte size", frame(b(0x40, 0x00, 0x01, 0x00), block(true, blockRLE, 257), b('x')), 257, 12},
		{"4-byte size, checksum", frame(b(0xa4), le32(5), raw5, b(1, 2, 3, 4)), 5, 21},
		{"8-byte size, single segment", frame(b(0xe0), le64(5), raw5), 5, 21},
		{"two blocks", frame(b(0x20, 6), block(false, blockRaw, 1), b('a'), raw5), 6, 18},
		{"compressed block skipped by size", frame(b(0x20, 9), block(true, blockCompressed, 4), b(9, 9, 9, 9)), 9, 13},
		{"dictionary id field holding 0", frame(b(0x21, 0, 5), raw5), 5, 15},
		{"trailing bytes not counted", append(frame(b(0x20, 5), raw5), 0xff), 5, 14},
		{"dictionary id set", frame(b(0x21, 7, 5), raw5), 0, 0},
		{"size not declared", frame(b(0x00, 0x00), raw5), 0, 14},
		{"size zero", frame(b(0x20, 0), block(true, blockRaw, 0)), 0, 0},
		{"reserved bit", frame(b(0x28, 5), raw5), 0, 0},
		{"reserved block type", frame(b(0x20, 5), block(true, 3, 5), []byte("hello")), 0, 0},
		{"block cut short", frame(b(0x20, 5), raw5[:7]), 0, 0},
		{"no last block", frame(b(0x20, 5), block(false, blockRaw, 5), []byte("hello")), 0, 0},
		{"checksum missing", frame(b(0x24, 5), raw5, b(1, 2)), 0, 0},
		{"header cut short", frame(b(0xe0), b(5, 0, 0)), 0, 0},
		{"skippable frame", append(le32(SkippableMagic), 0, 0, 0, 0), 0, 0},
		{"magic only", magic, 0, 0},
		{"empty", nil, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			size, n, _, ok := parseFrame(tc.in)
			require.Equal(t, tc.n != 0, ok)
			if ok {
				require.Equal(t, tc.size, size)
				require.Equal(t, tc.n, n)
			}
		})
	}
}

func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
func le64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

// resealMeta recomputes the metadata checksum of seg in place.
func resealMeta(seg []byte) {
	n := frameHeaderSize + int(binary.LittleEndian.Uint32(seg[4:]))
	binary.LittleEndian.PutUint64(seg[n-metaChecksumSize:], xxhash.Sum64(seg[:n-metaChecksumSize]))
}

// RequireSameDamage requires got to report the damage want reports: the same
// error, or, for data the zstd decoder rejected, the same offset and reason
// with the decoder's own words left out. Those may differ from one decode of
// the same bytes to the next: klauspost/compress's Decoder reuses its block
// decoders across calls, and a damaged block can fail on a check that depends
// on what a decoder last held (one CI run in 44 got "match offset (84) bigger
// than current history (53)" from one path and "output bigger than max block
// size (1024)" from the other, for the same flipped byte).
// It is exported (from a test file) for FuzzDecode, in package segment_test.
func RequireSameDamage(t *testing.T, want, got error, what string) {
	t.Helper()
	if want.Error() == got.Error() {
		return
	}
	var w, g *CorruptionError
	require.ErrorAs(t, want, &w, what)
	require.ErrorAs(t, got, &g, what)
	require.Equal(t, w.Offset, g.Offset, what)
	require.Equal(t, "decompress", w.Reason, "%s: %v against %v", what, want, got)
	require.Equal(t, w.Reason, g.Reason, what)
	for _, sentinel := range []error{ErrTruncated, ErrChecksum, ErrBadMagic, ErrTooLarge} {
		require.Equal(t, errors.Is(want, sentinel), errors.Is(got, sentinel), "%s: %v", what, sentinel)
	}
}

// TestDecode_MultiFrameDamage damages a three-frame segment in every way a
// byte flip, a truncation or a resealed lie in the metadata can: Decode must
// never panic, must report every damage it does not survive as corruption, and
// must give exactly what decoding the zstd data as one stream (the path every
// segment took before frames were decoded in parallel) gives: the same damage
// (RequireSameDamage), or the same entries. So must DecodeFrom.
func TestDecode_MultiFrameDamage(t *testing.T) {
	enc, dec := newTestCodec(t, 300)
	entries := sizedEntries(120, 150, 90, 200, 80, 60)
	data, meta, err := enc.Encode(Meta{WriterID: "w", Index: indexOf(entries)}, entries)
	require.NoError(t, err)
	n := len(data) - int(meta.PayloadLen)
	spans, ok := splitFrames(data[n:], meta.RawLen)
	require.True(t, ok, "%d bytes of JSONL", meta.RawLen)
	require.Len(t, spans, 3)
	require.True(t, dec.decodeFrames(data[n:], spans, make([]byte, meta.RawLen), nil), "undamaged: parallel path")

	check := func(t *testing.T, bad []byte, what string) (harmless bool) {
		t.Helper()
		seg, err := dec.Decode(bad)
		want, wantErr := dec.decodeInto(bad, false, nil)
		// DecodeFrom, reading the object in pieces, agrees too.
		fromSeg, fromErr := dec.DecodeFrom(iotest.HalfReader(bytes.NewReader(bad)), int64(len(bad)))
		if wantErr != nil {
			require.Error(t, fromErr, what)
			RequireSameDamage(t, wantErr, fromErr, what)
		} else {
			require.NoError(t, fromErr, what)
			require.Equal(t, want, fromSeg, what)
		}
		if wantErr != nil {
			require.Nil(t, seg, what)
			require.Error(t, err, what)
			RequireSameDamage(t, wantErr, err, what)
			require.ErrorIs(t, err, ErrCorrupt, what)
			var ce *CorruptionError
			require.ErrorAs(t, err, &ce, what)
			for _, sentinel := range []error{ErrTruncated, ErrChecksum, ErrBadMagic, ErrTooLarge} {
				require.Equal(t, errors.Is(wantErr, sentinel), errors.Is(err, sentinel), "%s: %v", what, sentinel)
			}
			return false
		}
		require.NoError(t, err, what)
		require.Equal(t, want, seg, what)
		require.Equal(t, entries, seg.Entries, what)
		return true
	}

	t.Run("flip every byte", func(t *testing.T) {
		harmless := 0
		for i := range data {
			for _, mask := range []byte{0x01, 0x80, 0xff} {
				bad := bytes.Clone(data)
				bad[i] ^= mask
				if check(t, bad, fmt.Sprintf("byte %d ^ %#x", i, mask)) {
					harmless++
				}
			}
		}
		t.Logf("%d of %d flips decoded to the original entries", harmless, 3*len(data))
	})
	t.Run("truncate at every length", func(t *testing.T) {
		for k := range len(data) {
			require.False(t, check(t, data[:k], fmt.Sprintf("prefix %d", k)))
			_, err := dec.Decode(data[:k])
			require.ErrorIs(t, err, ErrTruncated, "prefix %d", k)
		}
	})
	t.Run("resealed metadata lies", func(t *testing.T) {
		le := binary.LittleEndian
		at := func(off int) int { return frameHeaderSize + off }
		for _, tc := range []struct {
			name  string
			patch func(b []byte)
		}{
			{"raw length +1", func(b []byte) { le.PutUint64(b[at(offRawLen):], meta.RawLen+1) }},
			{"raw length -1", func(b []byte) { le.PutUint64(b[at(offRawLen):], meta.RawLen-1) }},
			{"raw length short by the last frame", func(b []byte) { le.PutUint64(b[at(offRawLen):], uint64(spans[2].out)) }},
			{"checksum", func(b []byte) { b[at(offChecksum)] ^= 1 }},
			{"entry count", func(b []byte) { le.PutUint32(b[at(offEntryCount):], meta.EntryCount-1) }},
		} {
			bad := bytes.Clone(data)
			tc.patch(bad)
			resealMeta(bad)
			require.False(t, check(t, bad, tc.name))
		}
	})
	t.Run("frames reordered or repeated", func(t *testing.T) {
		p := data[n:]
		f0, f1, f2 := p[spans[0].start:spans[0].end], p[spans[1].start:spans[1].end], p[spans[2].start:spans[2].end]
		for name, payload := range map[string][]byte{
			"swapped":           bytes.Join([][]byte{f1, f0, f2}, nil),
			"first twice":       bytes.Join([][]byte{f0, f0, f2}, nil),
			"middle dropped":    bytes.Join([][]byte{f0, f2}, nil),
			"skippable between": bytes.Join([][]byte{f0, le32(SkippableMagic + 1), le32(0), f1, f2}, nil),
		} {
			bad := append(bytes.Clone(data[:n]), payload...)
			le := binary.LittleEndian
			le.PutUint64(bad[frameHeaderSize+offPayloadLen:], uint64(len(payload)))
			resealMeta(bad)
			if name == "skippable between" {
				// Standard zstd skips it, and so does Decode, on the stream path.
				require.True(t, check(t, bad, name))
				continue
			}
			require.False(t, check(t, bad, name))
		}
	})
}

func indexOf(entries [][]byte) []IndexEntry {
	index := make([]IndexEntry, len(entries))
	for i, e := range entries {
		index[i] = IndexEntry{Len: uint32(len(e)), ID: strings.Repeat("i", i+1)}
	}
	return index
}

// TestGoldenMultiFrame checks that the multi-frame golden file is what it
// claims to be: several frames, each decoded in parallel in place.
func TestGoldenMultiFrame(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "multiframe-v2"+Ext))
	require.NoError(t, err)
	_, dec := newTestCodec(t, DefaultFrameSize)
	meta, n, err := dec.ReadMeta(data)
	require.NoError(t, err)
	spans, ok := splitFrames(data[n:], meta.RawLen)
	require.True(t, ok)
	require.GreaterOrEqual(t, len(spans), 3)
	require.True(t, dec.decodeFrames(data[n:], spans, make([]byte, meta.RawLen), nil))
	// A reader that decodes the data as one stream, as every reader before
	// multi-frame segments did, gets the same segment.
	par, err := dec.Decode(data)
	require.NoError(t, err)
	seq, err := dec.decodeInto(data, false, nil)
	require.NoError(t, err)
	require.Equal(t, seq, par)
}

// TestFrameStream_FeedsFramesAsTheyArrive feeds a multi-frame payload to a
// frameStream one byte at a time: each frame must be handed out exactly when
// its last byte arrives (not later: decoding overlaps the download), and the
// whole payload must decode in place.
func TestFrameStream_FeedsFramesAsTheyArrive(t *testing.T) {
	for _, tc := range []struct {
		name string
		lens []int
		size int
	}{
		{"declared sizes", repeatLen(12, 500), 1100},
		{"last frame without size", []int{600, 600, 100}, 700},
		{"a frame per entry", []int{300, 300, 300, 300}, 301},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc, dec := newTestCodec(t, tc.size)
			entries := sizedEntries(tc.lens...)
			data, meta, err := enc.Encode(Meta{}, entries)
			require.NoError(t, err)
			payload := data[len(data)-int(meta.PayloadLen):]
			spans, ok := splitFrames(payload, meta.RawLen)
			require.True(t, ok)

			fs := newFrameStream(dec, payload, make([]byte, meta.RawLen), meta.EntryCount)
			next := 0
			for got := 1; got <= len(payload); got++ {
				fs.feed(got)
				if next < len(spans) && got == spans[next].end {
					next++
				}
				require.Equal(t, next, fs.frames, "after %d bytes", got)
			}
			require.True(t, fs.finish())
			raw := bytes.Join(entries, []byte("\n"))
			require.Equal(t, append(raw, '\n'), fs.raw)
			// Each frame was hashed and cut as it came out of its worker.
			sum, hashed, cut := fs.check.result()
			require.True(t, hashed)
			require.Equal(t, meta.Checksum, sum)
			require.Equal(t, entries, cut)
		})
	}
	t.Run("one frame is not streamed", func(t *testing.T) {
		enc, dec := newTestCodec(t, DefaultFrameSize)
		data, meta, err := enc.Encode(Meta{}, sizedEntries(100, 100))
		require.NoError(t, err)
		fs := newFrameStream(dec, data[len(data)-int(meta.PayloadLen):], make([]byte, meta.RawLen), meta.EntryCount)
		fs.feed(int(meta.PayloadLen))
		require.False(t, fs.finish())
		require.Zero(t, fs.frames)
	})
}

// TestDecodeFrom_Streams checks that DecodeFrom decodes the frames of a
// multi-frame segment as they arrive instead of falling back to Decode, and
// that a single-frame segment simply goes to Decode.
func TestDecodeFrom_Streams(t *testing.T) {
	for _, tc := range []struct {
		name      string
		frameSize int
		streamed  bool
	}{
		{"several frames", 1000, true},
		{"one frame", DefaultFrameSize, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc, dec := newTestCodec(t, tc.frameSize)
			entries := sizedEntries(repeatLen(20, 300)...)
			data, meta, err := enc.Encode(Meta{}, entries)
			require.NoError(t, err)
			seg, streamed, err := dec.decodeFrom(iotest.HalfReader(bytes.NewReader(data)), int64(len(data)))
			require.NoError(t, err)
			require.Equal(t, tc.streamed, streamed)
			require.Equal(t, entries, seg.Entries)
			require.Equal(t, meta, seg.Meta)
		})
	}
}
