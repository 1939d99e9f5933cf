package main

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/benchkit"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucketurl"
)

// linearSession writes, under a directory store of its own, session s of agent
// memory: benchkit.WriteLinearSession's header and n message entries in one
// chain (the shape of the bench's item 12); it returns the store's URL and the
// session's size as JSONL.
func linearSession(tb testing.TB, n int) (store string, jsonl int64) {
	tb.Helper()
	store = "file://" + tb.TempDir()
	ctx := context.Background()
	bk, prefix, err := bucketurl.Open(ctx, store)
	require.NoError(tb, err)
	s, err := transcript.New(transcript.Config{Bucket: bk, Prefix: prefix})
	require.NoError(tb, err)
	defer s.Close()
	ref := transcript.TranscriptRef{AgentID: "memory", SessionID: "s"}
	jsonl, err = benchkit.WriteLinearSession(ctx, s, ref, n)
	require.NoError(tb, err)
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
