package transcript_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// TestAppendSegment_PayloadLooks: the requests a level-0 writer makes for one
// payload before its segment PUT. A new payload: the mark's HEAD and the
// object's (sent together), then the payload's PUT. A payload already stored:
// the object is looked at again after the mark (the first look may have come
// before it), and not sent. A marked payload: no PUT, and the entry keeps it
// inline. Every case reads back byte for byte.
func TestAppendSegment_PayloadLooks(t *testing.T) {
	img := imageData(51, 2*testThreshold)
	for _, tc := range []struct {
		name        string
		stored      bool // the payload object exists before the write
		marked      bool // and its mark
		heads, puts int  // requests of the write, the segment PUT included
		refs        int  // references the segment holds
	}{
		{"new", false, false, 2, 2, 1},
		{"stored", true, false, 3, 1, 1},
		{"marked", true, true, 2, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			b := &requestCounter{Bucket: newBucket(t)}
			s := newStore(t, b, transcript.Config{PayloadThreshold: testThreshold})
			other := transcript.TranscriptRef{Namespace: ref.Namespace, AgentID: ref.AgentID, SessionID: "other"}
			if tc.stored {
				_, err := s.AppendSegment(ctx, other, [][]byte{imageEntry("x", "", img)}, newWriter(t, "w0"))
				require.NoError(t, err)
			}
			if tc.marked {
				mark := ref.Namespace + "/payloads/gc/" + hashHex(img) + ".mark.json"
				require.NoError(t, b.Put(ctx, mark, bytes.NewReader([]byte("{}")), 2, bucket.PutOptions{}))
			}
			b.take()
			want := [][]byte{entry("a", ""), imageEntry("b", "a", img)}
			_, err := s.AppendSegment(ctx, ref, want, newWriter(t, "w1"))
			require.NoError(t, err)
			_, heads, _, puts, _ := b.take()
			require.Equal(t, tc.heads, heads, "HEADs")
			require.Equal(t, tc.puts, puts, "PUTs")
			stored, err := s.Stored().ReadAll(ctx, ref)
			require.NoError(t, err)
			require.Len(t, stored.Entries[1].Refs, tc.refs)
			requireEveryRead(t, s, ref, want)
		})
	}
}

// TestAppendSegments_Payloads: AppendSegments stores the payloads of its runs as
// AppendSegment does (the same requests: the looks, the payload PUT, then the
// segment PUT; a run without payloads is one PUT), and the segment keeps
// references. A batch with an entry the store refuses writes nothing, not even
// the payload of the entry before it.
func TestAppendSegments_Payloads(t *testing.T) {
	img := imageData(52, 2*testThreshold)
	for _, tc := range []struct {
		name       string
		batch      [][]byte
		heads      int // requests of the write
		puts       int
		refused    bool
		refEntries []int // entries of the stored session holding a reference
	}{
		{"payload", [][]byte{entry("a", ""), imageEntry("b", "a", img)}, 2, 2, false, []int{1}},
		{"no payload", [][]byte{entry("a", ""), entry("b", "a")}, 0, 1, false, nil},
		{"refused", [][]byte{imageEntry("a", "", img), []byte(`{"type":"message"`)}, 0, 0, true, nil},
		{"payload below the threshold", [][]byte{imageEntry("a", "", img[:testThreshold/2])}, 0, 1, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			b := &requestCounter{Bucket: newBucket(t)}
			s := newStore(t, b, transcript.Config{PayloadThreshold: testThreshold})
			infos, err := s.AppendSegments(ctx, ref, tc.batch, newWriter(t, "w1"))
			_, heads, _, puts, _ := b.take()
			require.Equal(t, tc.heads, heads, "HEADs")
			require.Equal(t, tc.puts, puts, "PUTs")
			if tc.refused {
				require.Error(t, err)
				require.Empty(t, infos)
				require.Empty(t, payloadKeys(t, b, "", ref.Namespace), "no payload stored")
				return
			}
			require.NoError(t, err)
			require.Len(t, infos, 1)
			stored, err := s.Stored().ReadAll(ctx, ref)
			require.NoError(t, err)
			var withRefs []int
			for i, e := range stored.Entries {
				if len(e.Refs) > 0 {
					withRefs = append(withRefs, i)
				}
			}
			require.Equal(t, tc.refEntries, withRefs)
			require.Equal(t, infos[0].Key, stored.Segments[0].Key)
			requireEveryRead(t, s, ref, tc.batch)
		})
	}
}

// TestAppendSegments_PayloadRunKeyedInOrder: a batch that AppendSegments cuts into
// several segments (over segment.DefaultTargetSegmentSize), the first holding a
// payload, is keyed in the batch's order, although the segment holding the
// payload is encoded only after its payload is stored, and reads back in order.
func TestAppendSegments_PayloadRunKeyedInOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 64 MiB entry")
	}
	ctx := context.Background()
	s := newStore(t, newBucket(t), transcript.Config{PayloadThreshold: testThreshold})
	var big bytes.Buffer
	big.WriteString(`{"type":"custom","id":"b","parentId":"a","data":[`)
	short := `"` + strings.Repeat("x", testThreshold/2) + `"`
	for big.Len() < segment.DefaultMaxEntrySize-2*len(short) {
		big.WriteString(short + ",")
	}
	big.WriteString(short + "]}")
	batch := [][]byte{imageEntry("a", "", imageData(53, 2*testThreshold)), big.Bytes(), entry("c", "b")}
	infos, err := s.AppendSegments(ctx, ref, batch, newWriter(t, "w1"))
	require.NoError(t, err)
	require.Greater(t, len(infos), 1, "the batch is cut")
	keys := make([]string, len(infos))
	for i, in := range infos {
		keys[i] = in.Key
	}
	require.True(t, slices.IsSorted(keys), "keys in the batch's order: %v", keys)
	res, err := s.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.Len(t, res.Entries, len(batch))
	for i, e := range res.Entries {
		require.True(t, bytes.Equal(batch[i], e.Raw), "entry %d", i)
	}
}
