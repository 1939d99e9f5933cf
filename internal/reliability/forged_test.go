package reliability_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/filebucket"
)

// TestHostile_ForgedSupersederAndMark plays a writer with create-only access to a
// session (no policy limiting it to level 0): after an honest writer appends a
// header and two entries in three segments, it stores a level-1 segment holding only
// its own entry that names the three as its inputs, and a deletion mark for them
// dated in the year 2000. Readers still see all five entries; Compact deletes
// nothing, neither with the default delay (the mark's age is its object's, seconds)
// nor with none (the superseder is checked and found lacking, naming both keys); the
// inputs are all still there.
func TestHostile_ForgedSupersederAndMark(t *testing.T) {
	backends := map[string]func(t *testing.T) bucket.Bucket{
		"file": func(t *testing.T) bucket.Bucket {
			b, err := filebucket.New(filepath.Join(t.TempDir(), "bucket"))
			require.NoError(t, err)
			return b
		},
		"minio": func(t *testing.T) bucket.Bucket {
			srv := sharedS3(t)
			return srv.open(t, srv.newBucket(t, "rel-forged-"), "", false, 30*time.Second, 0)
		},
	}
	for name, newBucket := range backends {
		t.Run(name, func(t *testing.T) {
			ctx := ctxTimeout(t, time.Minute)
			b := newBucket(t)
			store := newStore(t, b, "")
			ref := transcript.TranscriptRef{AgentID: "a", SessionID: "victim"}
			w := transcript.NewRandomWriter()
			var inputs, rel []string
			for _, e := range chainEntries("h", 3) {
				info, err := store.AppendSegment(ctx, ref, [][]byte{e}, w)
				require.NoError(t, err)
				inputs = append(inputs, info.Key)
				rel = append(rel, info.Key[strings.LastIndex(info.Key, "/L0/")+1:])
			}
			forged := putCrafted(ctx, t, b, ref, segment.Meta{WriterID: "evil", Seq: 1, Level: 1, Inputs: rel}, okEntry)
			outName := forged[strings.LastIndex(forged, "/L1/")+1:]
			mark, err := json.Marshal(map[string]any{"supersededBy": outName, "inputs": rel, "markedAt": "2000-01-01T00:00:00Z"})
			require.NoError(t, err)
			markKey := "default/a/victim/gc/" + strings.TrimSuffix(outName, transcript.SegmentExt) + ".mark.json"
			require.NoError(t, b.Put(ctx, markKey, bytes.NewReader(mark), int64(len(mark)), bucket.PutOptions{}))

			res, err := store.ReadAll(ctx, ref)
			require.NoError(t, err)
			require.Len(t, res.Entries, 4, "header, two entries and the forger's own")

			got, err := store.Compact(ctx, ref, transcript.CompactOptions{})
			require.NoError(t, err)
			require.Zero(t, got.Deleted)
			require.Equal(t, 3, got.Pending, "the mark is seconds old by the bucket's clock")
			_, err = store.Compact(ctx, ref, transcript.CompactOptions{DeleteDelay: transcript.DeleteAtOnce})
			var unheld *transcript.UnheldInput
			require.ErrorAs(t, err, &unheld)
			require.Equal(t, forged, unheld.Superseder)
			require.Contains(t, inputs, unheld.Input)
			for _, k := range inputs {
				_, err := b.Stat(ctx, k)
				require.NoError(t, err, "%s deleted on a forged segment's word", k)
			}
			_, err = b.Stat(ctx, markKey)
			require.NoError(t, err, "the forged mark stays, for the operator")

			segs := make([]*segment.Segment, 0, 4)
			infos, err := store.ListSegments(ctx, ref)
			require.NoError(t, err)
			for _, in := range infos {
				seg, err := store.ReadSegment(ctx, in.Key)
				require.NoError(t, err)
				segs = append(segs, seg)
			}
			require.Len(t, transcript.UnheldInputs(infos, segs), 3, "verify names the superseder against each input")
		})
	}
}
