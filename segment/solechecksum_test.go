package segment

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
)

// TestDecode_FrameChecksumChecked damages the content checksum that ends a
// segment's zstd data, byte by byte, and requires every damage to be reported
// as corruption, by Decode and by DecodeFrom: for a segment of one frame, which
// the decoder checks from its own hash of the JSONL (zstd's check skipped), and
// for one of several frames, which zstd checks frame by frame. The entries are
// intact, so a decoder that skipped the check would return them.
func TestDecode_FrameChecksumChecked(t *testing.T) {
	for _, tc := range []struct {
		name      string
		frameSize int
		sole      bool
	}{
		{"one frame", DefaultFrameSize, true},
		{"several frames", 4096, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc, dec := newTestCodec(t, tc.frameSize)
			entries := sizedEntries(repeatLen(30, 500)...)
			data, meta, err := enc.Encode(Meta{WriterID: "w", Seq: 1}, entries)
			require.NoError(t, err)
			payload := data[len(data)-int(meta.PayloadLen):]
			want, sole := soleFrameChecksum(payload)
			require.Equal(t, tc.sole, sole, "the payload is one frame with a checksum")
			if !sole {
				_, several := splitFrames(payload, meta.RawLen)
				require.True(t, several)
			} else {
				require.Equal(t, binary.LittleEndian.Uint32(data[len(data)-4:]), want)
			}
			seg, err := dec.Decode(data)
			require.NoError(t, err)
			require.Equal(t, entries, seg.Entries)

			for i := len(data) - 4; i < len(data); i++ {
				bad := bytes.Clone(data)
				bad[i] ^= 0x10
				seg, err := dec.Decode(bad)
				require.True(t, seg == nil, "a damaged segment decodes to nothing")
				require.ErrorIs(t, err, ErrCorrupt, "Decode, byte %d", i)
				require.ErrorIs(t, err, zstd.ErrCRCMismatch, "Decode, byte %d", i)
				seg, err = dec.DecodeFrom(bytes.NewReader(bad), int64(len(bad)))
				require.True(t, seg == nil, "a damaged segment decodes to nothing")
				require.ErrorIs(t, err, ErrCorrupt, "DecodeFrom, byte %d", i)
				require.ErrorIs(t, err, zstd.ErrCRCMismatch, "DecodeFrom, byte %d", i)
			}
		})
	}
}

// TestDecode_FrameWithoutChecksum decodes a segment whose one zstd frame has
// no content checksum, as another encoder may write it: the checking decoder
// takes it, the metadata's xxhash64 still covers the JSONL, and a changed
// entry is still caught.
func TestDecode_FrameWithoutChecksum(t *testing.T) {
	enc, dec := newTestCodec(t, DefaultFrameSize)
	require.NoError(t, enc.zenc.Close())
	var err error
	enc.zenc, err = zstd.NewWriter(nil, zstd.WithEncoderCRC(false), zstd.WithNoEntropyCompression(true))
	require.NoError(t, err)
	entries := [][]byte{[]byte(`{"id":"alpha","parentId":null}`), []byte(`{"id":"bravo","parentId":"alpha"}`)}
	data, meta, err := enc.Encode(Meta{WriterID: "w", Seq: 1}, entries)
	require.NoError(t, err)
	_, sole := soleFrameChecksum(data[len(data)-int(meta.PayloadLen):])
	require.False(t, sole, "no checksum to check")

	seg, err := dec.Decode(data)
	require.NoError(t, err)
	require.Equal(t, entries, seg.Entries)
	seg, err = dec.DecodeFrom(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	require.Equal(t, entries, seg.Entries)

	// The last entry's id changed in the frame's literals: zstd has no checksum
	// to compare, the metadata's does not match.
	i := bytes.LastIndex(data, []byte(`bravo`))
	require.Positive(t, i, "the frame stores the entries as literals")
	bad := bytes.Clone(data)
	bad[i] = 'c'
	_, err = dec.Decode(bad)
	require.ErrorIs(t, err, ErrChecksum)
	_, err = dec.DecodeFrom(bytes.NewReader(bad), int64(len(bad)))
	require.ErrorIs(t, err, ErrChecksum)
}
