package transcript_test

import (
	"cmp"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// cutBodies is a bucket whose GET bodies of segments end, after at bytes (half
// the object when at is 0), with io.ErrUnexpectedEOF: what an HTTP body reads
// like when its connection is cut.
type cutBodies struct {
	bucket.Bucket
	at int64
}

func (c cutBodies) Get(ctx context.Context, key string) (io.ReadCloser, bucket.ObjectInfo, error) {
	rc, oi, err := c.Bucket.Get(ctx, key)
	if err != nil || !strings.HasSuffix(key, transcript.SegmentExt) {
		return rc, oi, err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(io.LimitReader(rc, cmp.Or(c.at, oi.Size/2)), errReader{io.ErrUnexpectedEOF}), rc}, oi, nil
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// TestReadAll_CutBodyIsNotCorruption checks that a segment whose download is cut
// fails the read with the transport's error, even for a store that skips corrupt
// segments: a cut connection says nothing about the segment, so skipping it would
// drop entries that exist.
func TestReadAll_CutBodyIsNotCorruption(t *testing.T) {
	ctx := context.Background()
	big := make([][]byte, 0, 3000)
	for i := range cap(big) {
		big = append(big, benchEntry(i, "")) // over a frame of JSONL: several zstd frames
	}
	tests := []struct {
		name    string
		entries [][]byte
		at      int64
	}{
		{"small segment, cut in the metadata frame", benchBatch(0, 3), 4},
		{"small segment, cut in the data", benchBatch(0, 3), 0},
		{"multi-frame segment, cut in the metadata frame", big, 20},
		{"multi-frame segment, cut in the data", big, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := membucket.New()
			w := transcript.NewRandomWriter()
			plain, err := transcript.New(transcript.Config{Bucket: mem, Prefix: "p"})
			require.NoError(t, err)
			defer plain.Close()
			infos, err := plain.AppendSegments(ctx, ref, tt.entries, w)
			require.NoError(t, err)
			if len(tt.entries) == len(big) {
				require.Greater(t, infos[0].Size, int64(0))
				seg, err := plain.ReadSegment(ctx, infos[0].Key)
				require.NoError(t, err)
				require.Greater(t, seg.Meta.RawLen, uint64(segment.DefaultFrameSize))
			}
			s, err := transcript.New(transcript.Config{Bucket: cutBodies{mem, tt.at}, Prefix: "p", SkipCorrupt: true})
			require.NoError(t, err)
			defer s.Close()
			_, err = s.ReadAll(ctx, ref)
			require.ErrorIs(t, err, io.ErrUnexpectedEOF)
			require.NotErrorIs(t, err, segment.ErrCorrupt)
		})
	}
}
