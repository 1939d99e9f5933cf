package segment_test

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/transcriptstore/transcript/segment"
)

var benchSizes = []int{1, 10, 100, 1000}

// BenchmarkEncode measures Encode against a raw zstd EncodeAll of the same
// JSONL bytes (with the same level), per segment size in entries. SetBytes
// is the uncompressed JSONL size, so MB/s compare directly.
func BenchmarkEncode(b *testing.B) {
	enc, err := segment.NewEncoder()
	if err != nil {
		b.Fatal(err)
	}
	defer enc.Close()
	zenc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		b.Fatal(err)
	}
	defer zenc.Close()
	meta := sampleMeta()
	for _, n := range benchSizes {
		entries := makeEntries(n, uint64(n))
		raw := joinJSONL(entries)
		b.Run(fmt.Sprintf("size=%d/segment", n), func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := enc.Encode(meta, entries); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("size=%d/raw-zstd", n), func(b *testing.B) {
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			for b.Loop() {
				_ = zenc.EncodeAll(raw, nil)
			}
		})
	}
	// About 5 MB as one frame and as frames of DefaultFrameSize compressed in
	// parallel.
	entries := makeLargeEntries(5<<20, 3)
	for _, fc := range frameCases[:2] {
		enc := newFrameEncoder(b, fc.frameSize)
		b.Run("size=5MB/"+fc.name, func(b *testing.B) {
			b.SetBytes(rawSize(entries))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := enc.Encode(meta, entries); err != nil {
					b.Fatal(err)
				}
			}
		})
		_ = enc.Close()
	}
}

// BenchmarkDecode measures Decode (with all its verification) against a raw
// zstd DecodeAll of the same compressed bytes.
func BenchmarkDecode(b *testing.B) {
	enc, err := segment.NewEncoder()
	if err != nil {
		b.Fatal(err)
	}
	defer enc.Close()
	dec, err := segment.NewDecoder()
	if err != nil {
		b.Fatal(err)
	}
	defer dec.Close()
	zdec, err := zstd.NewReader(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer zdec.Close()
	for _, n := range benchSizes {
		entries := makeEntries(n, uint64(n))
		data, meta, err := enc.Encode(sampleMeta(), entries)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("size=%d/segment", n), func(b *testing.B) {
			b.SetBytes(int64(meta.RawLen))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := dec.Decode(data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("size=%d/raw-zstd", n), func(b *testing.B) {
			b.SetBytes(int64(meta.RawLen))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := zdec.DecodeAll(data, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}

	// A large compacted segment, about 5 MB of entries of a few KiB, written
	// as one zstd frame and as frames of DefaultFrameSize decoded in parallel.
	entries := makeLargeEntries(5<<20, 3)
	for _, fc := range frameCases {
		enc := newFrameEncoder(b, fc.frameSize)
		data, meta, err := enc.Encode(sampleMeta(), entries)
		if err != nil {
			b.Fatal(err)
		}
		_ = enc.Close()
		b.Run("size=5MB/"+fc.name, func(b *testing.B) {
			b.SetBytes(int64(meta.RawLen))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := dec.Decode(data); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(data)), "segment-bytes")
		})
	}
}

// BenchmarkDecodeFrom measures reading a ~5 MB segment from a reader that
// delivers about 500 MB/s (a fast object-store GET):
// all bytes first and then Decode, against DecodeFrom, which decodes the
// frames of a multi-frame segment while the rest arrives.
func BenchmarkDecodeFrom(b *testing.B) {
	dec, err := segment.NewDecoder()
	if err != nil {
		b.Fatal(err)
	}
	defer dec.Close()
	entries := makeLargeEntries(5<<20, 3)
	for _, fc := range frameCases[:2] {
		enc := newFrameEncoder(b, fc.frameSize)
		data, meta, err := enc.Encode(sampleMeta(), entries)
		if err != nil {
			b.Fatal(err)
		}
		_ = enc.Close()
		b.Run(fc.name+"/read-then-Decode", func(b *testing.B) {
			b.SetBytes(int64(meta.RawLen))
			for b.Loop() {
				all := make([]byte, len(data))
				if _, err := io.ReadFull(&throttledReader{data: data}, all); err != nil {
					b.Fatal(err)
				}
				if _, err := dec.Decode(all); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fc.name+"/DecodeFrom", func(b *testing.B) {
			b.SetBytes(int64(meta.RawLen))
			for b.Loop() {
				if _, err := dec.DecodeFrom(&throttledReader{data: data}, int64(len(data))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// throttledReader returns data at about 500 MB/s from its first read, in
// reads of at most 64 KiB.
type throttledReader struct {
	data  []byte
	start time.Time
	sent  int
}

func (r *throttledReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	if r.start.IsZero() {
		r.start = time.Now()
	}
	const bytesPerSec = 500e6
	want := min(len(p), 64<<10, len(r.data))
	for {
		avail := int(time.Since(r.start).Seconds()*bytesPerSec) - r.sent
		if avail > 0 {
			want = min(want, avail)
			break
		}
		time.Sleep(time.Duration(float64(want-avail) / bytesPerSec * float64(time.Second)))
	}
	n := copy(p[:want], r.data)
	r.data, r.sent = r.data[n:], r.sent+n
	return n, nil
}

// makeLargeEntries returns JSON entries of 1-6 KiB, about total bytes in
// all, deterministic for a given seed.
func makeLargeEntries(total int, seed uint64) [][]byte {
	var entries [][]byte
	n := 0
	for i := uint64(0); n < total; i++ {
		parts := makeEntries(4, seed*1000+i)
		e := bytes.Join(parts, []byte(`,`))
		e = append(append([]byte(`{"type":"compaction","parts":[`), e...), `]}`...)
		entries = append(entries, e)
		n += len(e) + 1
	}
	return entries
}

// frameCases are the frame sizes the large-segment benchmarks compare: one frame
// for the whole segment, DefaultFrameSize, and smaller frames.
var frameCases = []struct {
	name      string
	frameSize int
}{
	{"single-frame", 64 << 20},
	{"multi-frame", segment.DefaultFrameSize},
	{"multi-frame-256KiB", 256 << 10},
}

// newFrameEncoder returns an Encoder that cuts frames of frameSize bytes.
func newFrameEncoder(b *testing.B, frameSize int) *segment.Encoder {
	b.Helper()
	enc, err := segment.NewEncoder(segment.WithFrameSize(frameSize))
	if err != nil {
		b.Fatal(err)
	}
	return enc
}
