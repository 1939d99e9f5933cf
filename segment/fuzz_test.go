package segment_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
	"testing/iotest"

	"github.com/klauspost/compress/zstd"

	"github.com/transcriptstore/transcript/segment"
)

// FuzzDecode feeds arbitrary bytes to Decode and ReadMeta. Neither may panic;
// every error must be one of the package's typed errors; and whenever Decode
// succeeds, its entries joined with "\n" (plus the final newline) must equal
// what a plain zstd decoder makes of the whole object (differential check:
// `zstd -dc` and Decode agree on every accepted segment). DecodeFrom must
// agree with Decode on every input (the same error or the same damage), and so
// must a PackedIndex view, whose OriginAt and IndexAt give the records Decode's
// Origins and Index hold.
func FuzzDecode(f *testing.F) {
	for _, gc := range goldenCases() {
		data := readGolden(f, gc.name)
		f.Add(data)
		n := metaLen(f, data)
		f.Add(data[:n])
		f.Add(data[:len(data)-1])
		f.Add(append(bytes.Clone(data), 0))
	}
	enc, err := segment.NewEncoder()
	if err != nil {
		f.Fatal(err)
	}
	one, _, err := enc.Encode(segment.Meta{}, [][]byte{[]byte("{}")})
	if err != nil {
		f.Fatal(err)
	}
	_ = enc.Close()
	f.Add(one)
	// Several zstd frames, the last too small to declare its size.
	multi, err := segment.NewEncoder(segment.WithFrameSize(512))
	if err != nil {
		f.Fatal(err)
	}
	frames, _, err := multi.Encode(segment.Meta{}, append(makeEntries(4, 3), []byte(`{"id":"x"}`)))
	if err != nil {
		f.Fatal(err)
	}
	_ = multi.Close()
	f.Add(frames)
	f.Add([]byte{})
	f.Add([]byte{0x53, 0x2a, 0x4d, 0x18})
	f.Add(binary.LittleEndian.AppendUint32([]byte{0x53, 0x2a, 0x4d, 0x18}, 0xffffffff))
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0, 0})
	f.Add([]byte("TSEG{}\n"))

	dec, err := segment.NewDecoder(segment.WithMaxSegmentSize(8 << 20))
	if err != nil {
		f.Fatal(err)
	}
	plain, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(64<<20))
	if err != nil {
		f.Fatal(err)
	}
	packed := dec.PackedIndex()
	f.Cleanup(func() {
		_ = packed.Close() // a view: closes nothing
		_ = dec.Close()
		plain.Close()
	})

	f.Fuzz(func(t *testing.T, data []byte) {
		meta, n, merr := dec.ReadMeta(data)
		seg, err := dec.Decode(data)
		// DecodeFrom, reading in pieces, says exactly what Decode says.
		fromSeg, fromErr := dec.DecodeFrom(iotest.HalfReader(bytes.NewReader(data)), int64(len(data)))
		requireSameError(t, "DecodeFrom", err, fromErr)
		if err == nil && !reflect.DeepEqual(seg, fromSeg) {
			t.Fatalf("Decode and DecodeFrom return different segments")
		}
		packedSeg, packedErr := packed.DecodeFrom(iotest.HalfReader(bytes.NewReader(data)), int64(len(data)))
		requireSameError(t, "the packed view", err, packedErr)
		if err == nil {
			requireSamePacked(t, &seg.Meta, &packedSeg.Meta)
		}
		if err != nil {
			if seg != nil {
				t.Fatalf("Decode returned a segment and an error: %v", err)
			}
			requireTyped(t, err)
			if merr != nil {
				requireTyped(t, merr)
			}
			return
		}
		if merr != nil {
			t.Fatalf("Decode succeeded but ReadMeta failed: %v", merr)
		}
		if n <= 0 || n > len(data) || meta.EntryCount != seg.Meta.EntryCount || int(meta.EntryCount) != len(seg.Entries) {
			t.Fatalf("inconsistent metadata: n=%d meta=%+v seg=%+v", n, meta, seg.Meta)
		}
		want, err := plain.DecodeAll(data, nil)
		if err != nil {
			t.Fatalf("Decode succeeded but plain zstd failed: %v", err)
		}
		got := append(bytes.Join(seg.Entries, []byte("\n")), '\n')
		if !bytes.Equal(got, want) {
			t.Fatalf("Decode and plain zstd disagree:\n got %q\nwant %q", got, want)
		}
		// Every returned entry is one Encode would accept.
		for _, e := range seg.Entries {
			if len(e) == 0 || bytes.IndexByte(e, '\n') >= 0 {
				t.Fatalf("Decode returned an invalid entry %q", e)
			}
		}
	})
}

// requireSameError fails unless other (from what) failed as Decode did (err):
// the same error, or the same damage when only the zstd decoder's words for it
// differ (segment.RequireSameDamage says why they can) or both succeeded.
func requireSameError(t *testing.T, what string, err, other error) {
	t.Helper()
	if (err == nil) != (other == nil) {
		t.Fatalf("Decode: %v, %s: %v", err, what, other)
	}
	if err != nil {
		segment.RequireSameDamage(t, err, other, what)
	}
}

func requireTyped(t *testing.T, err error) {
	t.Helper()
	var ce *segment.CorruptionError
	switch {
	case errors.As(err, &ce):
		if !errors.Is(err, segment.ErrCorrupt) {
			t.Fatalf("CorruptionError that is not ErrCorrupt: %v", err)
		}
	case errors.Is(err, segment.ErrUnsupportedVersion),
		errors.Is(err, segment.ErrTooLarge),
		errors.Is(err, segment.ErrEntryTooLarge):
	default:
		t.Fatalf("untyped error: %v", err)
	}
}
