package transcript_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// TestStore_EncoderLevels checks which zstd level writes which segment: a
// store with its own codecs compresses level-0 segments at
// Level0EncoderLevel and compacted ones at the default level; an Encoder given
// in the Config writes both. zstd's output is deterministic for one level, so
// each stored object must equal what that level's encoder makes of the same
// metadata and entries, and differ from what the other level makes.
func TestStore_EncoderLevels(t *testing.T) {
	ctx := context.Background()
	newEncoder := func(opts ...segment.EncoderOption) *segment.Encoder {
		enc, err := segment.NewEncoder(opts...)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, enc.Close()) })
		return enc
	}
	fast := newEncoder(segment.WithEncoderLevel(transcript.Level0EncoderLevel))
	def := newEncoder()
	better := newEncoder(segment.WithEncoderLevel(zstd.SpeedBetterCompression))
	dec, err := segment.NewDecoder()
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, dec.Close()) })

	// Entries with enough repetition at a distance for the levels to differ.
	var entries [][]byte
	for i := range 40 {
		parent := ""
		if i > 0 {
			parent = fmt.Sprintf("e%02d", i-1)
		}
		e := entry(fmt.Sprintf("e%02d", i), parent)
		e = bytes.Replace(e, []byte(`"hi `), []byte(`"`+strings.Repeat(fmt.Sprintf("line %d of the tool output, ", i%7), 30)), 1)
		entries = append(entries, e)
	}
	// reencode decodes a stored segment and encodes its metadata and entries
	// again with enc.
	reencode := func(data []byte, enc *segment.Encoder) []byte {
		seg, err := dec.Decode(data)
		require.NoError(t, err)
		out, _, err := enc.Encode(seg.Meta, seg.Entries)
		require.NoError(t, err)
		return out
	}
	get := func(b *membucket.Bucket, key string) []byte {
		rc, _, err := b.Get(ctx, key)
		require.NoError(t, err)
		defer rc.Close()
		data, err := io.ReadAll(rc)
		require.NoError(t, err)
		return data
	}

	for _, tc := range []struct {
		name              string
		cfg               *segment.Encoder
		level0, compacted *segment.Encoder
		notLevel0         *segment.Encoder
	}{
		{"own codecs", nil, fast, def, def},
		{"an Encoder given", better, better, better, fast},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := membucket.New()
			s := newStore(t, b, transcript.Config{Encoder: tc.cfg})
			w := newWriter(t, "w1")
			half := len(entries) / 2
			a, err := s.AppendSegment(ctx, ref, entries[:half], w)
			require.NoError(t, err)
			_, err = s.AppendSegment(ctx, ref, entries[half:], w)
			require.NoError(t, err)

			data := get(b, a.Key)
			require.Equal(t, reencode(data, tc.level0), data, "a level-0 segment")
			require.NotEqual(t, reencode(data, tc.notLevel0), data, "a level-0 segment at the other level")

			res, err := s.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
			require.NoError(t, err)
			require.Equal(t, 1, res.SegmentsOut())
			out := res.Compactions[0].Output.Key
			data = get(b, out)
			require.Equal(t, reencode(data, tc.compacted), data, "the compacted segment")
			if tc.cfg == nil {
				require.NotEqual(t, reencode(data, fast), data, "the compacted segment at the level-0 level")
			}
			read, err := s.ReadAll(ctx, ref)
			require.NoError(t, err)
			require.Len(t, read.Entries, len(entries))
		})
	}
}
