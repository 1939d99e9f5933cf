package segment

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"testing/iotest"

	"github.com/cespare/xxhash/v2"
	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
)

func TestCutFrame(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		max  int
		want []string // nil: not cut
	}{
		{"entries", "a\nbb\nccc\n", 10, []string{"a", "bb", "ccc"}},
		{"one entry", "abc\n", 10, []string{"abc"}},
		{"entry at the limit", "abc\nd\n", 3, []string{"abc", "d"}},
		{"entry over the limit", "abcd\nd\n", 3, nil},
		{"no final newline", "a\nbb", 10, nil},
		{"starts mid-entry", "b\ncc\n", 10, []string{"b", "cc"}}, // cannot tell; the checksum and count can
		{"empty entry", "a\n\nb\n", 10, nil},
		{"only a newline", "\n", 10, nil},
		{"empty", "", 10, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The room given changes nothing but the allocations.
			for _, expect := range []int{0, 1, len(tc.want), 1000} {
				got := cutFrame([]byte(tc.in), tc.max, expect)
				if tc.want == nil {
					require.Nil(t, got)
					continue
				}
				require.Len(t, got, len(tc.want), "room for %d", expect)
				for i, e := range got {
					require.Equal(t, tc.want[i], string(e))
					require.Equal(t, len(e), cap(e), "entry %d clipped", i)
				}
			}
		})
	}
}

// framedSegment returns a segment whose JSONL is raw, cut into one zstd frame
// per piece at the given offsets (wherever they fall, entry boundary or not),
// with metadata that declares count entries and raw's true length and checksum.
func framedSegment(t *testing.T, raw []byte, count uint32, cuts ...int) []byte {
	t.Helper()
	enc, _ := newTestCodec(t, 1<<20)
	// Any valid segment gives a metadata frame to patch.
	data, meta, err := enc.Encode(Meta{WriterID: "w"}, [][]byte{[]byte(`{"id":"x"}`)})
	require.NoError(t, err)
	head := bytes.Clone(data[:len(data)-int(meta.PayloadLen)])

	zenc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	defer zenc.Close()
	var payload []byte
	prev := 0
	for _, c := range append(cuts, len(raw)) {
		payload = zenc.EncodeAll(raw[prev:c], payload)
		prev = c
	}
	le := binary.LittleEndian
	at := func(off int) int { return frameHeaderSize + off }
	le.PutUint32(head[at(offEntryCount):], count)
	le.PutUint64(head[at(offRawLen):], uint64(len(raw)))
	le.PutUint64(head[at(offChecksum):], xxhash.Sum64(raw))
	le.PutUint64(head[at(offPayloadLen):], uint64(len(payload)))
	resealMeta(head)
	return append(head, payload...)
}

// TestFrameCheck_FallsBackToOnePass decodes multi-frame segments whose frames
// do not each hold whole, valid entries (as another encoder may cut them) or
// whose JSONL is bad with a checksum that matches: the frame workers must not
// cut them, and Decode and DecodeFrom must give exactly what one pass over the
// whole JSONL gives, entries or error.
func TestFrameCheck_FallsBackToOnePass(t *testing.T) {
	// Frames under 256 bytes may leave out their size, which the parallel path
	// allows for one frame only: every piece here is longer.
	lines := sizedEntries(300, 310, 320, 330)
	jsonl := append(bytes.Join(lines, []byte("\n")), '\n')
	ends := []int{301, 612, 933} // offsets just after each of the first three newlines
	withEmpty := slices.Concat(lines[0], []byte("\n\n"), lines[1], []byte("\n"), lines[2], []byte("\n"))
	noNewline := jsonl[:len(jsonl)-1]
	for _, tc := range []struct {
		name     string
		raw      []byte
		count    uint32
		cuts     []int
		maxEntry int
		cutAhead bool // the workers' cut is used
		wantErr  string
	}{
		{name: "cut at entry boundaries", raw: jsonl, count: 4, cuts: []int{ends[0], ends[2]}, cutAhead: true},
		{name: "cut mid-entry", raw: jsonl, count: 4, cuts: []int{ends[0] + 100, ends[1] + 150}},
		{name: "cut just before a newline", raw: jsonl, count: 4, cuts: []int{ends[0] - 1, ends[1]}},
		{name: "cut after a newline's first half", raw: jsonl, count: 4, cuts: []int{ends[0] - 1, ends[1] + 1}},
		{name: "fewer entries declared", raw: jsonl, count: 3, cuts: []int{ends[1]}, wantErr: "more entries than the declared 3"},
		{name: "more entries declared", raw: jsonl, count: 5, cuts: []int{ends[1]}, wantErr: "4 entries, metadata declares 5"},
		{name: "empty entry", raw: withEmpty, count: 4, cuts: []int{ends[0] + 1}, wantErr: "empty entry 1"},
		{name: "no final newline", raw: noNewline, count: 4, cuts: []int{ends[1]}, wantErr: "does not end with a newline"},
		{name: "entry too large", raw: jsonl, count: 4, cuts: []int{ends[1]}, maxEntry: 315, wantErr: "is 320 bytes, limit 315"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := framedSegment(t, tc.raw, tc.count, tc.cuts...)
			var opts []DecoderOption
			if tc.maxEntry > 0 {
				opts = append(opts, WithMaxEntrySize(tc.maxEntry))
			}
			dec, err := NewDecoder(opts...)
			require.NoError(t, err)
			defer dec.Close()

			m, n, err := dec.readMeta(data)
			require.NoError(t, err)
			spans, ok := splitFrames(data[n:], m.RawLen)
			require.True(t, ok, "the parallel path applies")
			require.Len(t, spans, len(tc.cuts)+1)
			buf := make([]byte, m.RawLen)
			raw, check, one, err := dec.decompress(data[n:], buf, m.EntryCount, true)
			require.NoError(t, err)
			require.False(t, one.ok, "no one frame")
			require.Equal(t, tc.raw, raw)
			sum, hashed, entries := check.result()
			require.True(t, hashed, "hashed frame by frame")
			require.Equal(t, xxhash.Sum64(tc.raw), sum)
			require.Equal(t, tc.cutAhead, entries != nil, "cut by the workers")

			want, wantErr := dec.decodeInto(data, false, nil)
			got, err := dec.Decode(data)
			if tc.wantErr != "" {
				require.ErrorContains(t, wantErr, tc.wantErr)
				require.EqualError(t, err, wantErr.Error())
			} else {
				require.NoError(t, wantErr)
				require.NoError(t, err)
				require.Equal(t, want, got)
				require.Equal(t, bytes.Split(bytes.TrimSuffix(tc.raw, []byte("\n")), []byte("\n")), got.Entries)
			}
			for i, from := range []func() (*Segment, error){
				func() (*Segment, error) { return dec.DecodeFrom(bytes.NewReader(data), int64(len(data))) },
				func() (*Segment, error) {
					return dec.DecodeFrom(iotest.OneByteReader(bytes.NewReader(data)), int64(len(data)))
				},
			} {
				seg, err := from()
				if tc.wantErr != "" {
					require.EqualError(t, err, wantErr.Error(), "DecodeFrom %d", i)
					continue
				}
				require.NoError(t, err, "DecodeFrom %d", i)
				require.Equal(t, want, seg, "DecodeFrom %d", i)
			}
		})
	}
}

// TestFrameCheck_ChecksumOrder decodes frames finishing in every order: the
// frame-by-frame checksum must always come out as the checksum of the whole
// JSONL, and a frame left undecoded must leave it to verify.
func TestFrameCheck_ChecksumOrder(t *testing.T) {
	raw := []byte("a\nbb\nccc\ndddd\neeeee\n")
	spans := []frameSpan{{out: 0, size: 5}, {out: 5, size: 4}, {out: 9, size: 5}, {out: 14, size: 6}}
	orders := [][]int{{0, 1, 2, 3}, {3, 2, 1, 0}, {1, 3, 0, 2}, {2, 0, 3, 1}}
	for _, order := range orders {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			c := newFrameCheck(raw, 100, 5)
			for _, s := range spans {
				c.add(s)
			}
			for k, i := range order {
				c.decoded(i)
				_, hashed, _ := c.result()
				require.Equal(t, k == len(order)-1, hashed, "after %d frames", k+1)
			}
			sum, hashed, entries := c.result()
			require.True(t, hashed)
			require.Equal(t, xxhash.Sum64(raw), sum)
			require.Equal(t, bytes.Split(bytes.TrimSuffix(raw, []byte("\n")), []byte("\n")), entries)
		})
	}
	t.Run("spans that leave a gap", func(t *testing.T) {
		c := newFrameCheck(raw, 100, 5)
		c.add(frameSpan{out: 0, size: 5})
		c.add(frameSpan{out: 9, size: 11})
		c.decoded(0)
		c.decoded(1)
		_, hashed, entries := c.result()
		require.False(t, hashed)
		require.Nil(t, entries)
	})
	t.Run("nil", func(t *testing.T) {
		var c *frameCheck
		_, hashed, entries := c.result()
		require.False(t, hashed)
		require.Nil(t, entries)
	})
}

// TestFrameCheck_Expect: a frame's expected entries are its share of the
// declared count, with room to spare, so that cutting a frame of entries of the
// segment's average length allocates its slice once.
func TestFrameCheck_Expect(t *testing.T) {
	raw := bytes.Repeat([]byte("0123456789abcdef\n"), 1000) // 1,000 entries of 16 bytes
	c := newFrameCheck(raw, 100, 1000)
	for _, tc := range []struct{ size, atLeast int }{{0, 0}, {17, 1}, {1700, 100}, {len(raw), 1000}} {
		got := c.expect(tc.size)
		require.GreaterOrEqual(t, got, tc.atLeast, "frame of %d bytes", tc.size)
		require.LessOrEqual(t, got, tc.atLeast+tc.atLeast/8+8, "frame of %d bytes", tc.size)
	}
	require.Zero(t, newFrameCheck(nil, 100, 0).expect(10), "no raw bytes")
	frame := raw[:1700]
	allocs := testing.AllocsPerRun(20, func() { _ = cutFrame(frame, 100, c.expect(len(frame))) })
	require.Equal(t, 1.0, allocs, "one allocation for the frame's entries")
}
