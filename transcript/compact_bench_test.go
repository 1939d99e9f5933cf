package transcript_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// BenchmarkStore_Compact compacts sessions of 20 one-turn segments (three entries
// of about 5 KB in all per turn) on a memory bucket, DeleteAtOnce: the CPU and
// allocation cost of a compaction beside its I/O. Profile it with
//
//	go test -run '^$' -bench BenchmarkStore_Compact -cpuprofile /tmp/compact.prof ./transcript/
func BenchmarkStore_Compact(b *testing.B) {
	const sessions, segments = 8, 20
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("func return error nil context bucket segment entry merge level input output test ok fail")
	text := func(n int) string {
		var sb strings.Builder
		for sb.Len() < n {
			sb.WriteString(words[rng.IntN(len(words))])
			sb.WriteByte(' ')
		}
		return sb.String()
	}
	turn := func(id, parent string) [][]byte {
		mk := func(id, parent, content string) []byte {
			return []byte(fmt.Sprintf(`{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-09-25T22:29:10.000Z","message":{"role":"user","content":%q}}`, id, parent, content))
		}
		return [][]byte{mk(id+"u", parent, text(200)), mk(id+"a", id+"u", text(800)), mk(id, id+"a", text(1024+rng.IntN(5<<10)))}
	}
	var bytesIn int64
	for b.Loop() {
		b.StopTimer()
		s := newStore(b, membucket.New(), transcript.Config{})
		w := newWriter(b, "w")
		refs := make([]transcript.TranscriptRef, sessions)
		for i := range refs {
			refs[i] = transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: fmt.Sprintf("s%d", i)}
			parent := ""
			for k := range segments {
				id := fmt.Sprintf("t%d", k)
				_, err := s.AppendSegment(ctx, refs[i], turn(id, parent), w)
				require.NoError(b, err)
				parent = id
			}
		}
		b.StartTimer()
		for _, r := range refs {
			res, err := s.Compact(ctx, r, transcript.CompactOptions{DeleteDelay: transcript.DeleteAtOnce})
			require.NoError(b, err)
			require.Equal(b, segments, res.Deleted)
			bytesIn += res.BytesIn()
		}
	}
	b.ReportMetric(float64(bytesIn)/float64(b.N)/sessions, "stored-B/session")
}
