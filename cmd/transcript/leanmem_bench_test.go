package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucketurl"
)

// linearSession writes, under a directory store of its own, one session of a
// header and n message entries of about 100 bytes each, one chain, in segments of
// at most 100,000 entries (the shape of the bench's item 12), and returns the
// store's URL and the session's size as JSONL.
func linearSession(tb testing.TB, n int) (store string, jsonl int64) {
	tb.Helper()
	store = "file://" + tb.TempDir()
	ctx := context.Background()
	bk, prefix, err := bucketurl.Open(ctx, store)
	require.NoError(tb, err)
	s, err := transcript.New(transcript.Config{Bucket: bk, Prefix: prefix})
	require.NoError(tb, err)
	defer s.Close()
	w, err := transcript.NewWriter("bench")
	require.NoError(tb, err)
	ref := transcript.TranscriptRef{AgentID: "memory", SessionID: "s"}
	batch := [][]byte{[]byte(`{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}`)}
	jsonl = int64(len(batch[0]) + 1)
	parent := "null"
	for i := range n {
		id := fmt.Sprintf("%08x", uint32(i+1)*2654435761)
		raw := fmt.Sprintf(`{"type":"message","id":"%s","parentId":%s,"timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"m%d"}}`, id, parent, i)
		parent = `"` + id + `"`
		batch = append(batch, []byte(raw))
		jsonl += int64(len(raw) + 1)
		if len(batch) == 100_000 || i == n-1 {
			_, err := s.AppendSegments(ctx, ref, batch, w)
			require.NoError(tb, err)
			batch = batch[:0]
		}
	}
	return store, jsonl
}

// leanReadCommands are the CLI reads of one whole session whose memory item 12
// of the bench measures, as arguments after the store flags (out is a scratch
// directory).
func leanReadCommands(out string) []struct {
	name string
	args []string
} {
	return []struct {
		name string
		args []string
	}{
		{"restore", []string{"restore", "--out", filepath.Join(out, "restore")}},
		{"export", []string{"export", "--out", filepath.Join(out, "export.jsonl")}},
		{"context", []string{"context"}},
		{"verify", []string{"verify"}},
	}
}

// BenchmarkLeanRead100k runs restore, export, context and verify of a linear
// session of 100,000 entries (13 MiB of JSONL) in this process; run it with
// -benchmem (bytes allocated per command) and -memprofile for where they go.
func BenchmarkLeanRead100k(b *testing.B) {
	store, jsonl := linearSession(b, 100_000)
	for _, c := range leanReadCommands(b.TempDir()) {
		b.Run(c.name, func(b *testing.B) {
			args := append(c.args, "--store", store, "--agent", "memory", "--session", "s")
			b.ReportAllocs()
			for b.Loop() {
				if err := run(context.Background(), args, nil, io.Discard, io.Discard); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(jsonl), "jsonl-B")
		})
	}
}
