package transcript_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/s3test"
	"github.com/transcriptstore/transcript/transcript"
)

// BenchmarkReadHead measures a read of a strict session's head that names
// 1,000 level-0 segments (what appends leave between two visits of the
// compaction job), on MinIO: read and parsed whole (ReadHead, a reader that
// holds none), and read again by a holder while it is unchanged
// (ReadHeadSince: a GET answered 304, nothing parsed), as a handle's append or
// an event stream's poll does. Without MinIO it is skipped (and fails under
// CI=true).
func BenchmarkReadHead(b *testing.B) {
	ctx := b.Context()
	bk := s3test.MinIO().NewBucket(b, "transcript-headread-")
	s := newStore(b, bk, transcript.Config{})
	ref := transcript.TranscriptRef{Namespace: "acme", AgentID: "a", SessionID: "long"}
	h := transcript.Head{}
	for i := range 1000 {
		h = h.Commit(fmt.Sprintf("L0/20260301T120000.%09dZ-w-%016x-%016x.jsonl.zst", i, i, i), fmt.Sprintf("e%d", i), &transcript.Summary{Entries: i + 1})
	}
	held, err := s.WriteHead(ctx, ref, transcript.Head{}, h)
	require.NoError(b, err)
	data, _, err := bk.GetWithETag(ctx, s.SessionPrefix(ref)+transcript.HeadName)
	require.NoError(b, err)
	b.Run("ReadHead", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.ReadHead(ctx, ref); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(data)), "head-bytes")
	})
	b.Run("ReadHeadSince/unchanged", func(b *testing.B) {
		for b.Loop() {
			got, err := s.ReadHeadSince(ctx, ref, held)
			if err != nil {
				b.Fatal(err)
			}
			if !got.Same(held) {
				b.Fatal("the head changed")
			}
		}
		b.ReportMetric(float64(len(data)), "head-bytes")
	})
}
