package segment_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/segment"
)

// requireCorrupt asserts err is a *CorruptionError matching ErrCorrupt and,
// if want is not nil, want.
func requireCorrupt(t *testing.T, err error, want error, msgAndArgs ...any) {
	t.Helper()
	require.ErrorIs(t, err, segment.ErrCorrupt, msgAndArgs...)
	var ce *segment.CorruptionError
	require.ErrorAs(t, err, &ce, msgAndArgs...)
	if want != nil {
		require.ErrorIs(t, err, want, msgAndArgs...)
	}
}

// TestDecoder_DecodeFlipMetaBytes flips every bit pattern of every byte of
// the metadata frame of each golden segment: each flip must be detected,
// with the error its position implies.
func TestDecoder_DecodeFlipMetaBytes(t *testing.T) {
	_, dec := newCodec(t)
	for _, gc := range goldenCases() {
		data := readGolden(t, gc.name)
		n := metaLen(t, data)
		for i := range n {
			for _, mask := range []byte{0x01, 0x80, 0xff} {
				bad := bytes.Clone(data)
				bad[i] ^= mask
				var want error
				switch {
				case i < 4, i >= offMetaMagic && i < offMetaMagic+4:
					want = segment.ErrBadMagic
				case i < 8: // frame length: truncated, out of range or checksum in the wrong place
				default:
					want = segment.ErrChecksum
				}
				seg, err := dec.Decode(bad)
				require.Nil(t, seg)
				requireCorrupt(t, err, want, "%s: byte %d ^ %#x", gc.name, i, mask)
				_, _, err = dec.ReadMeta(bad)
				requireCorrupt(t, err, want, "%s: ReadMeta byte %d ^ %#x", gc.name, i, mask)
			}
		}
	}
}

// TestDecoder_DecodeFlipPayloadBytes flips every byte of the zstd data. The
// flip must be reported as corruption, unless it hit a bit the zstd decoder
// does not use (zstd has a few, e.g. in table descriptions), in which case
// the decoded entries must be exactly the original ones: Decode never
// returns content other than what was written.
func TestDecoder_DecodeFlipPayloadBytes(t *testing.T) {
	_, dec := newCodec(t)
	for _, gc := range goldenCases() {
		data := readGolden(t, gc.name)
		n := metaLen(t, data)
		harmless := 0
		for i := n; i < len(data); i++ {
			for _, mask := range []byte{0x01, 0xff} {
				bad := bytes.Clone(data)
				bad[i] ^= mask
				seg, err := dec.Decode(bad)
				if err == nil {
					require.Equal(t, gc.entries, seg.Entries, "%s: byte %d ^ %#x", gc.name, i, mask)
					harmless++
					continue
				}
				require.Nil(t, seg)
				requireCorrupt(t, err, nil, "%s: byte %d ^ %#x", gc.name, i, mask)
				// The metadata is intact and still readable on its own.
				_, _, err = dec.ReadMeta(bad)
				require.NoError(t, err)
			}
		}
		t.Logf("%s: %d of %d payload flips hit unused bits and decoded to the original entries", gc.name, harmless, 2*(len(data)-n))
	}
}

// craft returns golden segment data with its zstd data replaced by the
// compression of raw and the metadata declaring raw's length, checksum and
// the given entry count, resealed: only what raw itself gets wrong remains.
func craft(t *testing.T, data, raw []byte, count uint32) []byte {
	t.Helper()
	zenc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	defer zenc.Close()
	payload := zenc.EncodeAll(raw, nil)
	n := metaLen(t, data)
	out := append(bytes.Clone(data[:n]), payload...)
	le := binary.LittleEndian
	le.PutUint32(out[offEntryCount:], count)
	le.PutUint64(out[offRawLen:], uint64(len(raw)))
	le.PutUint64(out[offChecksum:], xxhash.Sum64(raw))
	le.PutUint64(out[offPayloadLen:], uint64(len(payload)))
	reseal(out)
	return out
}

func TestDecoder_DecodeCorruption(t *testing.T) {
	_, dec := newCodec(t)
	golden := readGolden(t, "small")
	n := metaLen(t, golden)
	le := binary.LittleEndian
	patch := func(f func(b []byte)) []byte {
		b := bytes.Clone(golden)
		f(b)
		return b
	}
	resealed := func(f func(b []byte)) []byte {
		return patch(func(b []byte) { f(b); reseal(b) })
	}
	plainZstd := func() []byte {
		zenc, err := zstd.NewWriter(nil)
		require.NoError(t, err)
		defer zenc.Close()
		return zenc.EncodeAll([]byte("{}\n"), nil)
	}()

	for _, tc := range []struct {
		name string
		data []byte
		want error // nil: ErrCorrupt only
	}{
		{"empty", nil, segment.ErrTruncated},
		{"plain zstd stream", plainZstd, segment.ErrBadMagic},
		{"text file", []byte(`{"type":"message"}` + "\n"), segment.ErrBadMagic},
		{"other skippable magic", patch(func(b []byte) { le.PutUint32(b, 0x184D2A50) }), segment.ErrBadMagic},
		{"wrong metadata magic", resealed(func(b []byte) { copy(b[offMetaMagic:], "XSEG") }), segment.ErrBadMagic},
		{"frame length absurd", patch(func(b []byte) { le.PutUint32(b[offFrameLen:], 0xffffffff) }), nil},
		{"frame length too small", patch(func(b []byte) { le.PutUint32(b[offFrameLen:], 10) }), nil},
		{"frame length past end", patch(func(b []byte) { le.PutUint32(b[offFrameLen:], uint32(len(b))) }), segment.ErrTruncated},
		{"metadata checksum", patch(func(b []byte) { b[n-1] ^= 1 }), segment.ErrChecksum},
		{"version 0", resealed(func(b []byte) { le.PutUint16(b[offVersion:], 0) }), nil},
		{"reserved byte set", resealed(func(b []byte) { b[offReserved] = 1 }), nil},
		{"string length overruns", resealed(func(b []byte) { le.PutUint16(b[offStrings:], 0xffff) }), nil},
		{"input count absurd", resealed(func(b []byte) { le.PutUint32(b[offInputCount:], 0xffffffff) }), nil},
		{"input count one too many", resealed(func(b []byte) { le.PutUint32(b[offInputCount:], 1) }), nil},
		{"entry count 0", resealed(func(b []byte) { le.PutUint32(b[offEntryCount:], 0) }), nil},
		{"entry count too high", resealed(func(b []byte) { le.PutUint32(b[offEntryCount:], 4) }), nil},
		{"entry count too low", resealed(func(b []byte) { le.PutUint32(b[offEntryCount:], 2) }), nil},
		{"raw length too high", resealed(func(b []byte) { le.PutUint64(b[offRawLen:], le.Uint64(b[offRawLen:])+1) }), nil},
		{"raw length too low", resealed(func(b []byte) { le.PutUint64(b[offRawLen:], le.Uint64(b[offRawLen:])-1) }), segment.ErrTooLarge},
		{"entries checksum", resealed(func(b []byte) { b[offChecksum] ^= 1 }), segment.ErrChecksum},
		{"payload length 0", resealed(func(b []byte) { le.PutUint64(b[offPayloadLen:], 0) }), nil},
		{"payload length too high", resealed(func(b []byte) { le.PutUint64(b[offPayloadLen:], le.Uint64(b[offPayloadLen:])+1) }), segment.ErrTruncated},
		{"payload length too low", resealed(func(b []byte) { le.PutUint64(b[offPayloadLen:], le.Uint64(b[offPayloadLen:])-1) }), nil},
		{"trailing garbage", append(bytes.Clone(golden), 0), nil},
		{"second segment appended", append(bytes.Clone(golden), golden...), nil},
		{"truncated in frame header", golden[:5], segment.ErrTruncated},
		{"truncated in metadata", golden[:n-1], segment.ErrTruncated},
		{"truncated after metadata", golden[:n], segment.ErrTruncated},
		{"truncated last byte", golden[:len(golden)-1], segment.ErrTruncated},
		{"zeroed payload", patch(func(b []byte) { clear(b[n:]) }), nil},
		{"empty entry", craft(t, golden, []byte("{}\n\n{}\n"), 3), nil},
		{"no final newline", craft(t, golden, []byte("{}\n{}"), 2), nil},
		{"leading newline", craft(t, golden, []byte("\n{}\n"), 2), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seg, err := dec.Decode(tc.data)
			require.Nil(t, seg)
			requireCorrupt(t, err, tc.want)
			require.NotErrorIs(t, err, segment.ErrUnsupportedVersion)
		})
	}
}

func TestDecoder_DecodeFutureVersion(t *testing.T) {
	_, dec := newCodec(t)
	data := bytes.Clone(readGolden(t, "compacted"))
	binary.LittleEndian.PutUint16(data[offVersion:], segment.FormatVersion+1)
	reseal(data)
	_, err := dec.Decode(data)
	require.ErrorIs(t, err, segment.ErrUnsupportedVersion)
	require.NotErrorIs(t, err, segment.ErrCorrupt)
	_, _, err = dec.ReadMeta(data)
	require.ErrorIs(t, err, segment.ErrUnsupportedVersion)

	// Without resealing, a changed version is a flipped byte: corruption.
	binary.LittleEndian.PutUint16(data[offVersion:], segment.FormatVersion+2)
	_, err = dec.Decode(data)
	require.ErrorIs(t, err, segment.ErrChecksum)
}

func TestCorruptionError(t *testing.T) {
	err := error(&segment.CorruptionError{Offset: 12, Reason: "metadata magic", Err: segment.ErrBadMagic})
	require.ErrorIs(t, err, segment.ErrCorrupt)
	require.ErrorIs(t, err, segment.ErrBadMagic)
	require.NotErrorIs(t, err, segment.ErrChecksum)
	require.Contains(t, err.Error(), "offset 12")
	require.ErrorIs(t, segment.ErrTruncated, segment.ErrCorrupt)
	require.ErrorIs(t, segment.ErrChecksum, segment.ErrCorrupt)
	require.ErrorIs(t, segment.ErrBadMagic, segment.ErrCorrupt)
	require.NotErrorIs(t, segment.ErrUnsupportedVersion, segment.ErrCorrupt)
}
