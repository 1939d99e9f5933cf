package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// TestJob_ForgedSupersederDeletesNothing: a level-1 segment that names a session's
// three segments as inputs but holds only its own entry, with a deletion mark dated
// in the year 2000, makes the job delete nothing, with the default delay (the mark
// is seconds old by the bucket) and with none (the superseder is checked and found
// lacking: the session fails, exit 1, naming both keys).
func TestJob_ForgedSupersederDeletesNothing(t *testing.T) {
	for name, newURL := range stores() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			url := newURL(t)
			s := openStore(t, url)
			refs, want := populate(t, s, 3)
			infos, err := s.ListSegments(ctx, refs[0])
			require.NoError(t, err)
			var rel []string
			for _, in := range infos {
				rel = append(rel, in.Key[strings.LastIndex(in.Key, "/L0/")+1:])
			}
			enc, err := segment.NewEncoder()
			require.NoError(t, err)
			defer enc.Close()
			data, meta, err := enc.Encode(segment.Meta{WriterID: "evil", Seq: 1, Level: 1, Inputs: rel},
				[][]byte{entry("evil", "")})
			require.NoError(t, err)
			forged := strings.Replace(infos[0].Key, "/L0/", "/L1/", 1)
			forged = forged[:strings.LastIndex(forged, "-")+1] + fmt.Sprintf("%016x", meta.Checksum) + transcript.SegmentExt
			b := s.Bucket()
			require.NoError(t, b.Put(ctx, forged, bytes.NewReader(data), int64(len(data)), bucket.PutOptions{}))
			out := forged[strings.LastIndex(forged, "/L1/")+1:]
			mark, err := json.Marshal(map[string]any{"supersededBy": out, "inputs": rel, "markedAt": "2000-01-01T00:00:00Z"})
			require.NoError(t, err)
			markKey := forged[:strings.LastIndex(forged, "/L1/")] + "/gc/" + strings.TrimSuffix(out, transcript.SegmentExt) + ".mark.json"
			require.NoError(t, b.Put(ctx, markKey, bytes.NewReader(mark), int64(len(mark)), bucket.PutOptions{}))
			before := snapshot(t, b)

			r := runBinary(t, ctx, "--store", url, "--json")
			require.Equal(t, 0, r.code, r.stderr)
			require.Zero(t, r.summary(t).Deletions)
			require.Equal(t, before, snapshot(t, b), "the default delay has not passed for a mark stored just now")

			r = runBinary(t, ctx, "--store", url, "--json", "--delete-delay", "0")
			require.Equal(t, 1, r.code, r.stderr)
			require.Contains(t, r.stderr, forged)
			require.Contains(t, r.stderr, "lacks its entry")
			require.Equal(t, before, snapshot(t, b), "nothing deleted on a forged segment's word")
			got, err := s.ReadAll(ctx, refs[0])
			require.NoError(t, err)
			require.Empty(t, got.Missing(want[refs[0]]))
		})
	}
}
