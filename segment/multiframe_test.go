package segment_test

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/transcriptstore/transcript/segment"
)

// TestCodec_MultiFrameNoLeaks encodes and decodes multi-frame segments, some
// concurrently, some damaged, and checks that no goroutine outlives the
// calls: Encode and Decode wait for every frame they hand to a goroutine.
func TestCodec_MultiFrameNoLeaks(t *testing.T) {
	enc, err := segment.NewEncoder(segment.WithFrameSize(4096))
	require.NoError(t, err)
	dec, err := segment.NewDecoder()
	require.NoError(t, err)

	entries := makeEntries(60, 11)
	data, _ := roundTrip(t, enc, dec, entries)

	// Damage in the last frame: the parallel path fails and Decode falls back.
	bad := bytes.Clone(data)
	bad[len(bad)-10] ^= 0xff
	_, err = dec.Decode(bad)
	require.ErrorIs(t, err, segment.ErrCorrupt)

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			entries := makeEntries(20+g*5, uint64(g))
			data, _, err := enc.Encode(sampleMeta(), entries)
			if err != nil {
				errs <- err
				return
			}
			seg, err := dec.Decode(data)
			switch {
			case err != nil:
				errs <- err
			case len(seg.Entries) != len(entries) || !bytes.Equal(seg.Entries[len(entries)-1], entries[len(entries)-1]):
				errs <- errors.New("round trip mismatch")
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, enc.Close())
	require.NoError(t, dec.Close())
	goleak.VerifyNone(t)
}

// TestEncoder_FrameSizeRoundTrip round-trips batches through encoders of
// several frame sizes: the entries, metadata and checksum do not depend on
// how the zstd data is cut, only the compressed bytes do.
func TestEncoder_FrameSizeRoundTrip(t *testing.T) {
	_, dec := newCodec(t)
	entries := makeEntries(300, 17)
	var sums []uint64
	for _, fs := range []int{1, 1000, 64 << 10, segment.DefaultFrameSize} {
		t.Run(fmt.Sprint(fs), func(t *testing.T) {
			enc, err := segment.NewEncoder(segment.WithFrameSize(fs))
			require.NoError(t, err)
			defer enc.Close()
			data, meta := roundTrip(t, enc, dec, entries)
			sums = append(sums, meta.Checksum)
			// Encoding is deterministic, frames compressed in parallel or not.
			again, _, err := enc.Encode(sampleMeta(), entries)
			require.NoError(t, err)
			require.Equal(t, data, again)
		})
	}
	for _, s := range sums {
		require.Equal(t, sums[0], s)
	}
}

// roundTrip encodes entries with sampleMeta, decodes the segment and checks that
// it gives back the entries and the metadata Encode returned.
func roundTrip(t *testing.T, enc *segment.Encoder, dec *segment.Decoder, entries [][]byte) ([]byte, segment.Meta) {
	t.Helper()
	data, meta, err := enc.Encode(sampleMeta(), entries)
	require.NoError(t, err)
	seg, err := dec.Decode(data)
	require.NoError(t, err)
	require.Equal(t, entries, seg.Entries)
	require.Equal(t, meta, seg.Meta)
	return data, meta
}

// TestDecode_EntriesEndAtTheirCapacity decodes segments of one frame and of
// many, whole and from a reader, and checks that every entry's capacity ends
// with it: the decode buffer's spare capacity past the raw bytes (left for
// zstd's wide copies) is never reachable by appending to an entry, and
// appending to one entry never writes over the next.
func TestDecode_EntriesEndAtTheirCapacity(t *testing.T) {
	dec, err := segment.NewDecoder()
	require.NoError(t, err)
	defer dec.Close()
	entries := makeEntries(60, 5)
	for _, frameSize := range []int{64 << 20, 4096} {
		enc, err := segment.NewEncoder(segment.WithFrameSize(frameSize))
		require.NoError(t, err)
		data, _, err := enc.Encode(sampleMeta(), entries)
		require.NoError(t, err)
		require.NoError(t, enc.Close())
		for _, how := range []string{"Decode", "DecodeFrom"} {
			t.Run(fmt.Sprintf("frame %d/%s", frameSize, how), func(t *testing.T) {
				var seg *segment.Segment
				if how == "Decode" {
					seg, err = dec.Decode(data)
				} else {
					seg, err = dec.DecodeFrom(bytes.NewReader(data), int64(len(data)))
				}
				require.NoError(t, err)
				require.Len(t, seg.Entries, len(entries))
				for i, e := range seg.Entries {
					require.Equal(t, len(e), cap(e), "entry %d", i)
					require.Equal(t, entries[i], e, "entry %d", i)
				}
			})
		}
	}
}
