package segment_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/transcriptstore/transcript/segment"
)

// chunkReader returns data in reads of at most n bytes.
type chunkReader struct {
	data []byte
	n    int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.data)
	c.data = c.data[k:]
	return k, nil
}

var readers = map[string]func([]byte) io.Reader{
	"whole":    func(b []byte) io.Reader { return bytes.NewReader(b) },
	"byte":     func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) },
	"half":     func(b []byte) io.Reader { return iotest.HalfReader(bytes.NewReader(b)) },
	"eof-data": func(b []byte) io.Reader { return iotest.DataErrReader(bytes.NewReader(b)) },
	"1000":     func(b []byte) io.Reader { return &chunkReader{data: b, n: 1000} },
}

// requireSameAsDecode checks that DecodeFrom of r with the given size gives
// what Decode gives for want: the same segment, or the same error.
func requireSameAsDecode(t *testing.T, dec *segment.Decoder, r io.Reader, size int64, want []byte, msgAndArgs ...any) {
	t.Helper()
	wantSeg, wantErr := dec.Decode(want)
	seg, err := dec.DecodeFrom(r, size)
	if wantErr != nil {
		require.Nil(t, seg, msgAndArgs...)
		require.Error(t, err, msgAndArgs...)
		require.Equal(t, wantErr.Error(), err.Error(), msgAndArgs...)
		for _, sentinel := range []error{segment.ErrCorrupt, segment.ErrTruncated, segment.ErrChecksum, segment.ErrBadMagic, segment.ErrTooLarge, segment.ErrUnsupportedVersion, segment.ErrEntryTooLarge} {
			require.Equal(t, errors.Is(wantErr, sentinel), errors.Is(err, sentinel), msgAndArgs...)
		}
		return
	}
	require.NoError(t, err, msgAndArgs...)
	require.Equal(t, wantSeg, seg, msgAndArgs...)
}

func multiFrameSegment(t testing.TB, frameSize, n int, seed uint64) []byte {
	enc, err := segment.NewEncoder(segment.WithFrameSize(frameSize))
	require.NoError(t, err)
	defer enc.Close()
	data, _, err := enc.Encode(sampleMeta(), makeEntries(n, seed))
	require.NoError(t, err)
	return data
}

// TestDecoder_DecodeFrom reads whole segments through readers that return
// them at once, byte by byte and in chunks: the result is Decode's.
func TestDecoder_DecodeFrom(t *testing.T) {
	_, dec := newCodec(t)
	segments := map[string][]byte{
		"multiframe-4KiB": multiFrameSegment(t, 4096, 60, 1),
		"multiframe-1MiB": multiFrameSegment(t, segment.DefaultFrameSize, 3000, 2),
		"one-frame":       multiFrameSegment(t, segment.DefaultFrameSize, 20, 3),
		"frame-per-entry": multiFrameSegment(t, 1, 30, 4),
	}
	for _, gc := range goldenCases() {
		segments["golden-"+gc.name] = readGolden(t, gc.name)
	}
	for name, data := range segments {
		for rname, newReader := range readers {
			t.Run(name+"/"+rname, func(t *testing.T) {
				requireSameAsDecode(t, dec, newReader(data), int64(len(data)), data)
				seg, err := dec.DecodeFrom(newReader(data), int64(len(data)))
				require.NoError(t, err)
				require.NotEmpty(t, seg.Entries)
			})
		}
	}
}

// TestDecoder_DecodeFromDamage: short reads at every length, every flipped
// byte, wrong sizes and failing readers give Decode's error for the bytes
// read, and never a segment Decode would not return.
func TestDecoder_DecodeFromDamage(t *testing.T) {
	_, dec := newCodec(t)
	data := readGolden(t, "multiframe-v2")
	size := int64(len(data))

	t.Run("short read at every length", func(t *testing.T) {
		for k := range len(data) {
			r := &chunkReader{data: data[:k], n: 700}
			requireSameAsDecode(t, dec, r, size, data[:k], "prefix %d", k)
			_, err := dec.DecodeFrom(bytes.NewReader(data[:k]), size)
			require.ErrorIs(t, err, segment.ErrTruncated, "prefix %d", k)
		}
	})
	t.Run("flip every byte", func(t *testing.T) {
		for i := range data {
			bad := bytes.Clone(data)
			bad[i] ^= 0xff
			requireSameAsDecode(t, dec, &chunkReader{data: bad, n: 1000}, size, bad, "byte %d", i)
		}
	})
	t.Run("sizes", func(t *testing.T) {
		long := append(bytes.Clone(data), "garbage"...)
		for _, tc := range []struct {
			name string
			in   []byte
			size int64
			want []byte // nil: ErrTruncated
		}{
			{"size one short", data, size - 1, data[:size-1]},
			{"size in metadata frame", data, 20, data[:20]},
			{"size in frame header", data, 5, data[:5]},
			{"size 0", data, 0, data[:0]},
			{"trailing bytes", long, int64(len(long)), long},
			{"trailing bytes cut by size", long, size + 3, long[:size+3]},
			{"trailing bytes beyond size", long, size, data},
			{"reader ends at the segment end, before size", data, size + 3, nil},
			{"reader ends in trailing bytes", long, int64(len(long)) + 1, long},
		} {
			t.Run(tc.name, func(t *testing.T) {
				for rname, newReader := range readers {
					if tc.want == nil {
						seg, err := dec.DecodeFrom(newReader(tc.in), tc.size)
						require.Nil(t, seg, rname)
						require.ErrorIs(t, err, segment.ErrTruncated, rname)
						continue
					}
					requireSameAsDecode(t, dec, newReader(tc.in), tc.size, tc.want, rname)
				}
			})
		}
	})
	t.Run("resealed metadata lies", func(t *testing.T) {
		// No index here: it would give the raw length lies away early.
		data := multiFrameSegment(t, 4096, 60, 6)
		size := int64(len(data))
		le := binary.LittleEndian
		rawLen := le.Uint64(data[offRawLen:])
		for _, tc := range []struct {
			name  string
			patch func(b []byte)
		}{
			{"raw length +1", func(b []byte) { le.PutUint64(b[offRawLen:], rawLen+1) }},
			{"raw length -1", func(b []byte) { le.PutUint64(b[offRawLen:], rawLen-1) }},
			{"raw length +4096", func(b []byte) { le.PutUint64(b[offRawLen:], rawLen+4096) }},
			{"raw length halved", func(b []byte) { le.PutUint64(b[offRawLen:], rawLen/2) }},
			{"checksum", func(b []byte) { b[offChecksum] ^= 1 }},
			{"entry count", func(b []byte) { le.PutUint32(b[offEntryCount:], le.Uint32(b[offEntryCount:])+1) }},
			{"payload length -1", func(b []byte) { le.PutUint64(b[offPayloadLen:], le.Uint64(b[offPayloadLen:])-1) }},
		} {
			bad := bytes.Clone(data)
			tc.patch(bad)
			reseal(bad)
			for rname, newReader := range readers {
				requireSameAsDecode(t, dec, newReader(bad), size, bad, tc.name+"/"+rname)
			}
		}
	})
	t.Run("reader fails", func(t *testing.T) {
		// A connection cut mid-body reads as io.ErrUnexpectedEOF from an HTTP
		// body: a failed read, never a truncated (corrupt) segment.
		for _, boom := range []error{errors.New("connection reset"), io.ErrUnexpectedEOF} {
			for _, k := range []int{0, 4, 30, len(data) / 2, len(data) - 1} {
				r := io.MultiReader(bytes.NewReader(data[:k]), iotest.ErrReader(boom))
				seg, err := dec.DecodeFrom(r, size)
				require.Nil(t, seg)
				require.ErrorIs(t, err, boom, "after %d bytes", k)
				require.NotErrorIs(t, err, segment.ErrCorrupt, "after %d bytes", k)
			}
		}
		_, err := dec.DecodeFrom(bytes.NewReader(data), -1)
		require.Error(t, err)
	})
}

// TestDecoder_DecodeFromNoLeaks: the frame workers of DecodeFrom are gone
// when it returns, after a success, a damaged frame, a short read or a
// failing reader.
func TestDecoder_DecodeFromNoLeaks(t *testing.T) {
	dec, err := segment.NewDecoder()
	require.NoError(t, err)
	data := multiFrameSegment(t, 4096, 60, 5)
	bad := bytes.Clone(data)
	bad[len(bad)/2] ^= 0xff
	for i, r := range []io.Reader{
		&chunkReader{data: data, n: 512},
		&chunkReader{data: bad, n: 512},
		&chunkReader{data: data[:len(data)*3/4], n: 512},
		io.MultiReader(&chunkReader{data: data[:len(data)*3/4], n: 512}, iotest.ErrReader(errors.New("boom"))),
	} {
		_, err := dec.DecodeFrom(r, int64(len(data)))
		if i == 0 {
			require.NoError(t, err)
		} else {
			require.Error(t, err, fmt.Sprint(i))
		}
	}
	require.NoError(t, dec.Close())
	goleak.VerifyNone(t)
}
