package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucketurl"
)

// BenchmarkRestore measures `transcript restore` (the built binary, --parallel 8) of
// 300 sessions of 3 segments each from a directory store into a fresh directory.
func BenchmarkRestore(b *testing.B) {
	const sessions, segments = 300, 3
	store := "file://" + b.TempDir()
	ctx := context.Background()
	bk, prefix, err := bucketurl.Open(ctx, store)
	require.NoError(b, err)
	s, err := transcript.New(transcript.Config{Bucket: bk, Prefix: prefix})
	require.NoError(b, err)
	defer s.Close()
	w, err := transcript.NewWriter("bench")
	require.NoError(b, err)
	for i := range sessions {
		ref := transcript.TranscriptRef{AgentID: fmt.Sprintf("agent-%d", i%10), SessionID: fmt.Sprintf("s%d", i)}
		header := fmt.Sprintf(`{"type":"session","version":3,"id":"s%d","timestamp":"2026-09-25T22:28:55.488Z","cwd":"/w"}`, i)
		parent := ""
		for k := range segments {
			var batch [][]byte
			if k == 0 {
				batch = append(batch, []byte(header))
			}
			for j := range 10 {
				id := fmt.Sprintf("e%d-%d", k, j)
				batch = append(batch, []byte(entryLine(id, parent)))
				parent = id
			}
			_, err := s.AppendSegment(ctx, ref, batch, w)
			require.NoError(b, err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		r := cli(b, "restore", "--store", store, "--out", b.TempDir(), "--json")
		if r.code != 0 {
			b.Fatalf("restore: %s %s", r.stdout, r.stderr)
		}
		var sum restoreSummary
		require.NoError(b, json.NewDecoder(strings.NewReader(r.stdout)).Decode(&sum))
		require.Equal(b, sessions, sum.Restored)
		b.ReportMetric(sum.Seconds, "restore-s/op")
	}
}
