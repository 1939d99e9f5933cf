package segment_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/segment"
)

func TestEncoder_EncodeRoundTrip(t *testing.T) {
	enc, dec := newCodec(t)
	for _, n := range []int{1, 2, 10, 300} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			entries := makeEntries(n, uint64(n))
			in := sampleMeta()
			in.Level = 1
			in.Inputs = []string{"a/L0/1.jsonl.zst", "a/L0/2.jsonl.zst"}
			in.MinTime = in.MinTime.In(time.FixedZone("X", 3600)) // normalised to UTC
			in.RawLen, in.Checksum = 99, 99                       // ignored

			data, meta, err := enc.Encode(in, entries)
			require.NoError(t, err)
			require.Equal(t, uint16(segment.Version2), meta.Version, "no payload references: version 2")
			require.Equal(t, uint32(n), meta.EntryCount)
			require.Equal(t, uint64(rawSize(entries)), meta.RawLen)
			require.Equal(t, xxhash.Sum64(joinJSONL(entries)), meta.Checksum)
			require.Equal(t, time.UTC, meta.MinTime.Location())
			require.True(t, meta.MinTime.Equal(in.MinTime))

			seg, err := dec.Decode(data)
			require.NoError(t, err)
			require.Equal(t, meta, seg.Meta)
			require.Equal(t, entries, seg.Entries)

			rm, k, err := dec.ReadMeta(data)
			require.NoError(t, err)
			require.Equal(t, meta, rm)
			require.Equal(t, len(data), k+int(rm.PayloadLen))
			// A prefix holding just the metadata frame is enough.
			rm2, k2, err := dec.ReadMeta(data[:k])
			require.NoError(t, err)
			require.Equal(t, meta, rm2)
			require.Equal(t, k, k2)
		})
	}
}

func TestEncoder_EncodeZeroTimesAndEmptyStrings(t *testing.T) {
	enc, dec := newCodec(t)
	data, meta, err := enc.Encode(segment.Meta{Inputs: []string{}}, [][]byte{[]byte("{}")})
	require.NoError(t, err)
	require.Nil(t, meta.Inputs)
	seg, err := dec.Decode(data)
	require.NoError(t, err)
	require.Equal(t, meta, seg.Meta)
	require.True(t, seg.Meta.MinTime.IsZero())
	require.True(t, seg.Meta.MaxTime.IsZero())
}

func TestSegment_EntriesDoNotAlias(t *testing.T) {
	enc, dec := newCodec(t)
	data, _, err := enc.Encode(sampleMeta(), [][]byte{[]byte("{1}"), []byte("{2}")})
	require.NoError(t, err)
	seg, err := dec.Decode(data)
	require.NoError(t, err)
	_ = append(seg.Entries[0], 'X')
	require.Equal(t, "{2}", string(seg.Entries[1]))
}

// TestEncoder_ClampsTimes: entry times outside the int64 nanosecond span are
// recorded at its nearest end, never refused.
func TestEncoder_ClampsTimes(t *testing.T) {
	enc, dec := newCodec(t)
	lo, hi := time.Unix(0, math.MinInt64).UTC(), time.Unix(0, math.MaxInt64).UTC()
	for _, tc := range []struct {
		name             string
		min, max         time.Time
		wantMin, wantMax time.Time
	}{
		{"2300", time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), hi, hi},
		{"year 9999 and year 1", time.Date(1, 1, 2, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), lo, hi},
		{"in range", time.Unix(10, 0).UTC(), time.Unix(20, 0).UTC(), time.Unix(10, 0).UTC(), time.Unix(20, 0).UTC()},
		{"the epoch stays known", time.Unix(0, 0).UTC(), time.Unix(0, 0).UTC(), time.Unix(0, 1).UTC(), time.Unix(0, 1).UTC()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, meta, err := enc.Encode(segment.Meta{MinTime: tc.min, MaxTime: tc.max}, [][]byte{[]byte("{}")})
			require.NoError(t, err)
			require.Equal(t, tc.wantMin, meta.MinTime)
			require.Equal(t, tc.wantMax, meta.MaxTime)
			seg, err := dec.Decode(data)
			require.NoError(t, err)
			require.Equal(t, meta, seg.Meta)
		})
	}
}

func TestCheckEntrySize(t *testing.T) {
	require.NoError(t, segment.CheckEntrySize(segment.DefaultMaxEntrySize))
	err := segment.CheckEntrySize(segment.DefaultMaxEntrySize + 1)
	require.ErrorIs(t, err, segment.ErrEntryTooLarge)
	require.ErrorContains(t, err, "64 MiB")
}

func TestEncoder_EncodeRejects(t *testing.T) {
	enc, err := segment.NewEncoder(segment.WithEncoderMaxEntrySize(10), segment.WithEncoderMaxSegmentSize(25))
	require.NoError(t, err)
	defer enc.Close()
	long := strings.Repeat("x", segment.MaxStringLen+1)
	for _, tc := range []struct {
		name    string
		meta    segment.Meta
		entries [][]byte
		want    error
	}{
		{"no entries", segment.Meta{}, nil, segment.ErrInvalidEntry},
		{"empty entry", segment.Meta{}, [][]byte{[]byte("{}"), {}}, segment.ErrInvalidEntry},
		{"newline", segment.Meta{}, [][]byte{[]byte("{}\n{}")}, segment.ErrInvalidEntry},
		{"trailing newline", segment.Meta{}, [][]byte{[]byte("{}\n")}, segment.ErrInvalidEntry},
		{"entry too large", segment.Meta{}, [][]byte{[]byte("{12345678901}")}, segment.ErrEntryTooLarge},
		{"segment too large", segment.Meta{}, [][]byte{[]byte("{1234567}"), []byte("{1234567}"), []byte("{1234567}")}, segment.ErrTooLarge},
		{"long writer id", segment.Meta{WriterID: long}, [][]byte{[]byte("{}")}, segment.ErrInvalidMeta},
		{"long input", segment.Meta{Inputs: []string{"k", long}}, [][]byte{[]byte("{}")}, segment.ErrInvalidMeta},
		{"min after max", segment.Meta{MinTime: time.Unix(10, 0), MaxTime: time.Unix(5, 0)}, [][]byte{[]byte("{}")}, segment.ErrInvalidMeta},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, _, err := enc.Encode(tc.meta, tc.entries)
			require.ErrorIs(t, err, tc.want)
			require.NotErrorIs(t, err, segment.ErrCorrupt)
			require.Nil(t, data)
		})
	}
}

func TestNewEncoder_BadOptions(t *testing.T) {
	for _, opt := range []segment.EncoderOption{
		segment.WithEncoderMaxEntrySize(0),
		segment.WithEncoderMaxSegmentSize(-1),
		segment.WithEncoderLevel(zstd.EncoderLevel(99)),
		segment.WithFrameSize(0),
		segment.WithFrameSize(-1),
	} {
		_, err := segment.NewEncoder(opt)
		require.Error(t, err)
	}
	for _, opt := range []segment.DecoderOption{
		segment.WithMaxEntrySize(-1),
		segment.WithMaxSegmentSize(0),
		segment.WithMaxDecoderMemory(100),
	} {
		_, err := segment.NewDecoder(opt)
		require.Error(t, err)
	}
}

func TestEncoder_Levels(t *testing.T) {
	entries := makeEntries(50, 3)
	dec, err := segment.NewDecoder()
	require.NoError(t, err)
	defer dec.Close()
	for _, l := range []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault, zstd.SpeedBetterCompression, zstd.SpeedBestCompression} {
		t.Run(l.String(), func(t *testing.T) {
			enc, err := segment.NewEncoder(segment.WithEncoderLevel(l))
			require.NoError(t, err)
			defer enc.Close()
			data, _, err := enc.Encode(sampleMeta(), entries)
			require.NoError(t, err)
			seg, err := dec.Decode(data)
			require.NoError(t, err)
			require.Equal(t, entries, seg.Entries)
		})
	}
}

func TestDecoder_DecodeEntryTooLarge(t *testing.T) {
	enc, _ := newCodec(t)
	dec, err := segment.NewDecoder(segment.WithMaxEntrySize(5))
	require.NoError(t, err)
	defer dec.Close()
	data, _, err := enc.Encode(sampleMeta(), [][]byte{[]byte("{1}"), []byte("{123456}")})
	require.NoError(t, err)
	_, err = dec.Decode(data)
	require.ErrorIs(t, err, segment.ErrEntryTooLarge)
	require.NotErrorIs(t, err, segment.ErrCorrupt)
}

func TestDecoder_DecodeDeclaredSizeOverLimit(t *testing.T) {
	enc, _ := newCodec(t)
	data, _, err := enc.Encode(sampleMeta(), [][]byte{bytes.Repeat([]byte("a"), 1<<20)})
	require.NoError(t, err)
	for _, opt := range []segment.DecoderOption{
		segment.WithMaxSegmentSize(1 << 16),
		segment.WithMaxDecoderMemory(1 << 16),
	} {
		dec, err := segment.NewDecoder(opt)
		require.NoError(t, err)
		_, err = dec.Decode(data)
		require.ErrorIs(t, err, segment.ErrTooLarge)
		require.NotErrorIs(t, err, segment.ErrCorrupt)
		// The metadata alone is still readable.
		_, _, err = dec.ReadMeta(data)
		require.NoError(t, err)
		require.NoError(t, dec.Close())
	}
}

// bombPayload returns a zstd stream without a declared content size that
// decompresses to size zero bytes.
func bombPayload(t testing.TB, size int64) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := zstd.NewWriter(&buf, zstd.WithEncoderLevel(zstd.SpeedFastest))
	require.NoError(t, err)
	_, err = io.Copy(zw, io.LimitReader(zeroReader{}, size))
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// withPayload replaces the zstd data of seg by payload and declares rawLen,
// resealing the metadata so that only the lie about the size remains.
func withPayload(t testing.TB, seg, payload []byte, rawLen uint64) []byte {
	n := metaLen(t, seg)
	out := append(bytes.Clone(seg[:n]), payload...)
	binary.LittleEndian.PutUint64(out[offRawLen:], rawLen)
	binary.LittleEndian.PutUint64(out[offPayloadLen:], uint64(len(payload)))
	reseal(out)
	return out
}

func TestDecoder_DecodeBomb(t *testing.T) {
	enc, dec := newCodec(t, segment.WithMaxSegmentSize(16<<20))
	small, _, err := enc.Encode(sampleMeta(), [][]byte{[]byte("{}")})
	require.NoError(t, err)
	bomb := bombPayload(t, 64<<20) // 64 MiB of zeros in a few KiB
	t.Logf("bomb: %d compressed bytes", len(bomb))

	t.Run("declared size over limit", func(t *testing.T) {
		_, err := dec.Decode(withPayload(t, small, bomb, 64<<20))
		require.ErrorIs(t, err, segment.ErrTooLarge)
	})
	t.Run("declared size small, actual huge", func(t *testing.T) {
		_, err := dec.Decode(withPayload(t, small, bomb, 4096))
		require.ErrorIs(t, err, segment.ErrTooLarge)
		require.ErrorIs(t, err, segment.ErrCorrupt)
		var ce *segment.CorruptionError
		require.ErrorAs(t, err, &ce)
	})
	t.Run("declared size impossible for payload", func(t *testing.T) {
		_, err := dec.Decode(withPayload(t, small, []byte{1, 2, 3, 4}, 1<<20))
		require.ErrorIs(t, err, segment.ErrCorrupt)
	})
	t.Run("frame content size over limit", func(t *testing.T) {
		zenc, err := zstd.NewWriter(nil)
		require.NoError(t, err)
		payload := zenc.EncodeAll(make([]byte, 1<<20), nil) // declares 1 MiB
		require.NoError(t, zenc.Close())
		_, err = dec.Decode(withPayload(t, small, payload, 1000))
		require.ErrorIs(t, err, segment.ErrTooLarge)
		require.ErrorIs(t, err, segment.ErrCorrupt)
	})
}

func TestCodec_ConcurrentUse(t *testing.T) {
	enc, dec := newCodec(t)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Go(func() {
			for i := range 20 {
				entries := makeEntries(1+(g*7+i)%40, uint64(g*100+i))
				m := sampleMeta()
				m.Seq = uint64(i)
				data, _, err := enc.Encode(m, entries)
				if err != nil {
					errs <- err
					return
				}
				seg, err := dec.Decode(data)
				if err != nil {
					errs <- err
					return
				}
				if seg.Meta.Seq != uint64(i) || len(seg.Entries) != len(entries) || !bytes.Equal(seg.Entries[0], entries[0]) {
					errs <- errors.New("round trip mismatch")
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

func TestMetaSize(t *testing.T) {
	enc, _ := newCodec(t)
	data, _, err := enc.Encode(sampleMeta(), [][]byte{[]byte("{}")})
	require.NoError(t, err)
	n, err := segment.MetaSize(data[:8])
	require.NoError(t, err)
	require.Less(t, n, len(data))
	_, err = segment.MetaSize(data[:7])
	require.ErrorIs(t, err, segment.ErrTruncated)
}
