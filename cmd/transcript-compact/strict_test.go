package main

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucketurl"
)

// strictSession creates strict session id of agent "coder" in namespace "acme"
// and commits n more one-entry segments to it, as transcript-serve does.
func strictSession(t *testing.T, s *transcript.Store, id string, n int) (transcript.TranscriptRef, []string) {
	t.Helper()
	ctx := context.Background()
	w, err := transcript.NewWriter("server-1")
	require.NoError(t, err)
	ref := transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: id}
	header := fmt.Appendf(nil, `{"type":"session","version":3,"id":%q,"timestamp":"2026-11-29T10:00:00.000Z","cwd":"/w"}`, id)
	_, h, err := s.CreateSession(ctx, ref, [][]byte{header}, w, transcript.CreateOptions{Strict: true, Summary: &transcript.Summary{Cwd: "/w"}})
	require.NoError(t, err)
	var ids []string
	parent := ""
	for k := range n {
		eid := fmt.Sprintf("%s-e%d", id, k)
		_, h, err = s.CommitSegment(ctx, ref, h, [][]byte{entry(eid, parent)}, w, eid, nil)
		require.NoError(t, err)
		ids, parent = append(ids, eid), eid
	}
	return ref, ids
}

// TestJob_StrictSessions: the job compacts strict sessions through their head,
// and names every session it skips, with why, in its text and JSON summaries.
func TestJob_StrictSessions(t *testing.T) {
	url := "file://" + t.TempDir()
	s := openStore(t, url)
	ctx := context.Background()
	compacted, want := strictSession(t, s, "s-strict", 6)

	// A strict session whose commits are not in key order (a writer whose clock
	// was behind committed after one whose clock was ahead): merging its level 0
	// would reorder what the head replays, so the job leaves it.
	disorder, _ := strictSession(t, s, "s-disorder", 2)
	b, prefix, err := bucketurl.Open(ctx, url)
	require.NoError(t, err)
	past := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	behind, err := transcript.New(transcript.Config{Bucket: b, Prefix: prefix, Now: func() time.Time { return past }})
	require.NoError(t, err)
	t.Cleanup(func() { behind.Close() })
	h, err := s.ReadHead(ctx, disorder)
	require.NoError(t, err)
	w, err := transcript.NewWriter("slow")
	require.NoError(t, err)
	info, err := behind.AppendSegment(ctx, disorder, [][]byte{entry("late", "s-disorder-e1")}, w)
	require.NoError(t, err)
	_, err = s.WriteHead(ctx, disorder, h, h.Commit(info.Key, "late", nil))
	require.NoError(t, err)

	r := runBinary(t, ctx, "--store", url, "--delete-delay", "0", "--min-segments", "2", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	requireSchema(t, []byte(r.stdout), "transcript-compact")
	sum := r.summary(t)
	require.Equal(t, 2, sum.SessionsScanned)
	require.Equal(t, 1, sum.SessionsCompacted)
	require.Equal(t, []skippedSession{{Session: disorder.String(), Reason: transcript.SkipCommitOrder}}, sum.Skipped)

	res, err := s.ReadAll(ctx, compacted)
	require.NoError(t, err)
	require.Len(t, res.Segments, 1, "the strict session is one segment")
	h, err = s.ReadHead(ctx, compacted)
	require.NoError(t, err)
	require.Len(t, h.Segments, 1, "its head names the compacted segment only")
	require.Equal(t, "s-strict-e5", h.Entry)
	var got []string
	for _, e := range h.Replay(res.Entries)[1:] {
		got = append(got, e.ID)
	}
	require.Equal(t, want, got)

	// The text summary names the skipped session too, and why.
	r = runBinary(t, ctx, "--store", url, "--delete-delay", "0", "--min-segments", "2", "--older-than", "1000h")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "skipped "+compacted.String()+": "+reasonRecent+"\n")
	require.Contains(t, r.stdout, "skipped "+disorder.String()+": "+reasonRecent+"\n")
	require.Contains(t, r.stdout, "2 skipped (2 as recent)")
}

// requireSchema requires data to be the shape $defs/def of
// docs/cli-json.schema.json gives it.
func requireSchema(t *testing.T, data []byte, def string) {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	sch, err := c.Compile("../../docs/cli-json.schema.json#/$defs/" + def)
	require.NoError(t, err)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	require.NoError(t, err)
	require.NoError(t, sch.Validate(inst), string(data))
}
