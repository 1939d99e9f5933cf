package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// writeSessions writes sessions s000 to s{n-1} of agent in namespace acme, each of
// segments one-entry segments, in that order and a little apart, so their last
// updates rank them (s000 the oldest) on a backend with millisecond times.
func writeSessions(t *testing.T, s *transcript.Store, agent string, n, segments int) []transcript.TranscriptRef {
	t.Helper()
	w, err := transcript.NewWriter("replica-1")
	require.NoError(t, err)
	var refs []transcript.TranscriptRef
	for i := range n {
		ref := transcript.TranscriptRef{Namespace: "acme", AgentID: agent, SessionID: fmt.Sprintf("s%03d", i)}
		refs = append(refs, ref)
		appendEntries(t, s, ref, w, segments)
		time.Sleep(20 * time.Millisecond)
	}
	return refs
}

// appendEntries appends n one-entry segments to ref, each a child of the last.
func appendEntries(t *testing.T, s *transcript.Store, ref transcript.TranscriptRef, w *transcript.Writer, n int) {
	t.Helper()
	ctx := context.Background()
	parent := ""
	res, err := s.ReadAll(ctx, ref)
	if !errors.Is(err, bucket.ErrNotFound) {
		require.NoError(t, err)
		parent = res.Entries[len(res.Entries)-1].ID
	}
	for i := range n {
		id := fmt.Sprintf("%s-e%d-%d", ref.SessionID, i, time.Now().UnixNano())
		_, err := s.AppendSegment(ctx, ref, [][]byte{entry(id, parent)}, w)
		require.NoError(t, err)
		parent = id
	}
}

// hasRetentionMark reports whether ref holds a retention mark.
func hasRetentionMark(t *testing.T, s *transcript.Store, ref transcript.TranscriptRef) bool {
	t.Helper()
	_, err := s.Bucket().Stat(context.Background(), s.SessionPrefix(ref)+transcript.RetentionMarkName)
	if errors.Is(err, bucket.ErrNotFound) {
		return false
	}
	require.NoError(t, err)
	return true
}

// TestJob_Retention, on the directory backend and MinIO: keep-last with a hold. A
// dry run lists what would go and changes nothing; a run marks; a session written
// to during the delete delay survives, the other marked one is deleted once the
// delay has passed, and the held one stays. The counts are in the summary, whose
// JSON has the schema's shape.
func TestJob_Retention(t *testing.T) {
	for name, newURL := range stores() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			url := newURL(t)
			s := openStore(t, url)
			refs := writeSessions(t, s, "coder", 4, 2) // s000 oldest, s003 newest
			args := []string{"--store", url, "--keep-last", "1", "--hold", "acme/coder/s000", "--min-segments", "3", "--delete-delay", "1s"}
			before := snapshot(t, s.Bucket())

			r := runBinary(t, ctx, append(args, "--dry-run", "--json")...)
			require.Equal(t, 0, r.code, r.stderr)
			requireSchema(t, []byte(r.stdout), "transcript-compact")
			sum := r.summary(t)
			require.NotNil(t, sum.Retention)
			require.Equal(t, retentionSummary{SessionsExamined: 4, Marked: 2, KeptByHold: 1}, *sum.Retention)
			require.Contains(t, r.stderr, "retention plan acme/coder/s002: marked for deletion (keep-last 1: number 2 by last write)")
			require.Contains(t, r.stderr, "retention plan acme/coder/s001: marked for deletion (keep-last 1: number 3 by last write)")
			require.Contains(t, r.stderr, "retention plan acme/coder/s000: kept by a hold (keep-last 1: number 4 by last write)")
			require.NotContains(t, r.stderr, "s003")
			r = runBinary(t, ctx, append(args, "--dry-run")...)
			require.Equal(t, 0, r.code, r.stderr)
			require.Contains(t, r.stdout, "retention plan acme/coder/s001: marked for deletion")
			require.Contains(t, r.stdout, "retention: 4 sessions examined; would mark 2, would delete 0")
			require.Equal(t, before, snapshot(t, s.Bucket()), "a dry run changes nothing")

			r = runBinary(t, ctx, append(args, "--json")...)
			require.Equal(t, 0, r.code, r.stderr)
			requireSchema(t, []byte(r.stdout), "transcript-compact")
			require.Equal(t, retentionSummary{SessionsExamined: 4, Marked: 2, KeptByHold: 1}, *r.summary(t).Retention)
			for i, want := range []bool{false, true, true, false} {
				require.Equal(t, want, hasRetentionMark(t, s, refs[i]), refs[i].String())
			}
			res, err := s.ReadAll(ctx, refs[2])
			require.NoError(t, err)
			require.Len(t, res.Entries, 2, "a marked session reads as before")

			w, err := transcript.NewWriter("replica-2")
			require.NoError(t, err)
			appendEntries(t, s, refs[1], w, 1) // during the delete delay
			// The delay is on the bucket's clock, which MinIO gives to the second.
			time.Sleep(2200 * time.Millisecond)
			r = runBinary(t, ctx, append(args, "--json")...)
			require.Equal(t, 0, r.code, r.stderr)
			requireSchema(t, []byte(r.stdout), "transcript-compact")
			rs := *r.summary(t).Retention
			require.Positive(t, rs.ObjectsDeleted)
			require.Positive(t, rs.BytesDeleted)
			rs.ObjectsDeleted, rs.BytesDeleted = 0, 0
			// s001 is now the newest, so s003 is number 2: marked.
			require.Equal(t, retentionSummary{SessionsExamined: 4, Marked: 1, Deleted: 1, KeptByHold: 1, Survived: 1}, rs)
			require.Contains(t, r.stderr, "retention acme/coder/s001: survived: 1 segment written since it was marked")
			require.Contains(t, r.stderr, "retention acme/coder/s002: deleted, ")

			for i, want := range []int{2, 3, 0, 2} {
				// Segments, not SessionExists: these sessions have no Pi header.
				infos, err := s.ListSegments(ctx, refs[i])
				require.NoError(t, err)
				require.Equal(t, want > 0, len(infos) > 0, refs[i].String())
				if want > 0 {
					res, err := s.ReadAll(ctx, refs[i])
					require.NoError(t, err)
					require.Len(t, res.Entries, want, refs[i].String())
				}
			}
			require.False(t, hasRetentionMark(t, s, refs[1]), "the survivor's mark is dropped")
			require.True(t, hasRetentionMark(t, s, refs[3]))
		})
	}
}

// TestJob_RetentionFile: a policy file's most specific rule applies to each agent
// (here a keepAll exempts one agent from the rule for all), and its holds count.
func TestJob_RetentionFile(t *testing.T) {
	url := "file://" + t.TempDir()
	s := openStore(t, url)
	writeSessions(t, s, "coder", 3, 1)
	writeSessions(t, s, "auditor", 3, 1)
	policy := filepath.Join(t.TempDir(), "retention.yaml")
	require.NoError(t, os.WriteFile(policy, []byte(`rules:
  - keepLast: 1
  - namespace: acme
    agent: auditor
    keepAll: true
holds: [acme/coder/s000]
`), 0o644))
	before := snapshot(t, s.Bucket())
	r := runBinary(t, context.Background(), "--store", url, "--retention", policy, "--dry-run")
	require.Equal(t, 0, r.code, r.stderr)
	require.ElementsMatch(t, []string{
		"retention plan acme/coder/s001: marked for deletion (keep-last 1: number 2 by last write)\n",
		"retention plan acme/coder/s000: kept by a hold (keep-last 1: number 3 by last write)\n",
	}, grepLines(r.stdout, "retention plan "), "one line per session it would change, in any order")
	require.Contains(t, r.stdout, "retention: 6 sessions examined; would mark 1, would delete 0 (0 objects, 0 bytes); 0 waiting for their delay, 1 kept by a hold")
	require.Equal(t, before, snapshot(t, s.Bucket()))
}

// grepLines returns the lines of s that start with prefix, each with its newline.
func grepLines(s, prefix string) []string {
	var out []string
	for _, l := range strings.SplitAfter(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// TestJob_RetentionSkipsCompaction: a session retention marks is not compacted
// (it is to be deleted); the others are.
func TestJob_RetentionSkipsCompaction(t *testing.T) {
	url := "file://" + t.TempDir()
	s := openStore(t, url)
	writeSessions(t, s, "coder", 3, 2)
	r := runBinary(t, context.Background(), "--store", url, "--keep-last", "1", "--min-segments", "2", "--delete-delay", "1h", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	sum := r.summary(t)
	require.Equal(t, 2, sum.Retention.Marked)
	require.Equal(t, 1, sum.SessionsCompacted)
	infos, err := s.ListSegments(context.Background(), transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: "s002"})
	require.NoError(t, err)
	require.Equal(t, 1, infos[len(infos)-1].Level, "the kept session is compacted")
}

// TestJob_RetentionDryRunPlansWhatTheRunDoes: a dry run's compaction plan
// leaves out the sessions its retention would delete, as the real run (which
// deletes them first) does; it used to plan their compaction too, so its counts
// differed from the run's. Both a deletion at once and one whose mark is due.
func TestJob_RetentionDryRunPlansWhatTheRunDoes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		delay string
		mark  bool // run once first to write the retention marks
	}{
		{"delete at once", "0", false},
		{"mark due", "1ms", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			url := "file://" + t.TempDir()
			s := openStore(t, url)
			writeSessions(t, s, "coder", 3, 2)
			args := []string{"--store", url, "--keep-last", "1", "--min-segments", "2", "--delete-delay", tc.delay, "--json"}
			if tc.mark {
				r := runBinary(t, ctx, append(args, "--min-segments", "9")...)
				require.Equal(t, 0, r.code, r.stderr)
				require.Equal(t, 2, r.summary(t).Retention.Marked)
				time.Sleep(5 * time.Millisecond)
			}
			dry := runBinary(t, ctx, append(args, "--dry-run")...)
			require.Equal(t, 0, dry.code, dry.stderr)
			real := runBinary(t, ctx, args...)
			require.Equal(t, 0, real.code, real.stderr)
			d, r := dry.summary(t), real.summary(t)
			require.Equal(t, 2, d.Retention.Deleted)
			require.Equal(t, r.Retention.Deleted, d.Retention.Deleted)
			require.Equal(t, 1, r.SessionsCompacted, "the kept session")
			require.Equal(t, r.SessionsCompacted, d.SessionsCompacted, "dry run stdout: %s", dry.stdout)
			require.Equal(t, r.SegmentsIn, d.SegmentsIn)
			require.Empty(t, grepLines(dry.stderr, "plan acme/coder/s000"), "a session the dry run deletes is not planned")
		})
	}
}

// TestJob_RetentionShards: with --shard, each agent's sessions are decided by
// exactly one worker (keep-last ranks them together), so the workers together
// decide every session once, and agree with one worker.
func TestJob_RetentionShards(t *testing.T) {
	url := "file://" + t.TempDir()
	s := openStore(t, url)
	const agents, sessions, n = 6, 3, 3
	for a := range agents {
		writeSessions(t, s, fmt.Sprintf("agent%d", a), sessions, 1)
	}
	examined, marked := 0, 0
	for i := range n {
		r := runBinary(t, context.Background(), "--store", url, "--shard", fmt.Sprintf("%d/%d", i, n),
			"--keep-last", "1", "--delete-delay", "1h", "--json")
		require.Equal(t, 0, r.code, r.stderr)
		rs := r.summary(t).Retention
		require.Zero(t, rs.SessionsExamined%sessions, "shard %d decides whole agents: %+v", i, rs)
		examined += rs.SessionsExamined
		marked += rs.Marked
	}
	require.Equal(t, agents*sessions, examined, "every session decided by exactly one shard")
	require.Equal(t, agents*(sessions-1), marked)
	for a := range agents {
		ref := transcript.TranscriptRef{Namespace: "acme", AgentID: fmt.Sprintf("agent%d", a), SessionID: fmt.Sprintf("s%03d", sessions-1)}
		require.False(t, hasRetentionMark(t, s, ref), "the newest session of %s is kept", ref.AgentID)
	}
	r := runBinary(t, context.Background(), "--store", url, "--keep-last", "1", "--delete-delay", "1h", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, retentionSummary{SessionsExamined: agents * sessions, Pending: agents * (sessions - 1)}, *r.summary(t).Retention,
		"one worker takes the shards' decisions as they are")
}

// TestJob_RetentionUsage: a mistake in the retention flags or the policy file is a
// usage error (exit 2) that says what is wrong, and the job does nothing.
func TestJob_RetentionUsage(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	unknown := file("unknown.yaml", "rules:\n  - maxage: 30d\n")
	badAge := file("age.yaml", "rules:\n  - namespace: acme\n    maxAge: 30 days\n")
	good := file("good.yaml", "rules:\n  - keepLast: 3\n")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad duration", []string{"--max-age", "30"}, `Error: --max-age "30": want a positive duration such as 720h, 90m or 30d`},
		{"negative duration", []string{"--max-age", "-2h"}, `Error: --max-age "-2h": want a positive duration`},
		{"negative keep-last", []string{"--keep-last", "-1"}, "Error: --keep-last -1: want at least 1"},
		{"hold without a policy", []string{"--hold", "acme/coder/s1"}, "Error: --hold needs a policy: --max-age, --keep-last or --retention"},
		{"bad hold", []string{"--keep-last", "2", "--hold", "acme/coder"}, `Error: --hold: hold "acme/coder": want namespace/agent/session`},
		{"hold of an invalid name", []string{"--keep-last", "2", "--hold", "acme/../s"}, `Error: --hold: hold acme/../s: invalid transcript reference`},
		{"unknown key", []string{"--retention", unknown}, "Error: --retention: " + unknown + `:2: rules[0]: unknown field "maxage" (want namespace, agent, maxAge, keepLast, keepAll)`},
		{"bad duration in the file", []string{"--retention", badAge}, "Error: --retention: " + badAge + `:3: rules[0].maxAge: "30 days": want a positive duration`},
		{"missing file", []string{"--retention", filepath.Join(dir, "nope.yaml")}, "Error: --retention: open " + filepath.Join(dir, "nope.yaml") + ": no such file or directory"},
		{"file and flags", []string{"--retention", good, "--max-age", "1h"}, "Error: --retention takes the rules from its file: drop --max-age and --keep-last"},
		{"one session", []string{"--keep-last", "2", "--agent", "coder", "--session", "s1"}, "Error: --session with a retention policy"},
		{"flag mistyped", []string{"--keep-lats", "2"}, "unknown flag --keep-lats (did you mean --keep-last?)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := t.TempDir()
			r := runBinary(t, context.Background(), append([]string{"--store", "file://" + store}, tt.args...)...)
			require.Equal(t, 2, r.code, r.stderr)
			require.Contains(t, r.stderr, tt.want)
			require.Empty(t, r.stdout)
			entries, err := os.ReadDir(store)
			require.NoError(t, err)
			require.Empty(t, entries)
		})
	}
}

// TestJob_RetentionMetricsPush: --metrics-push sends the run's counts, retention's
// among them, to a Pushgateway, grouped by shard; a Pushgateway that cannot be
// reached is a warning, not a failed run.
func TestJob_RetentionMetricsPush(t *testing.T) {
	url := "file://" + t.TempDir()
	s := openStore(t, url)
	writeSessions(t, s, "coder", 3, 1)
	var mu sync.Mutex
	var paths []string
	families := map[string]*dto.MetricFamily{}
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		paths = append(paths, r.Method+" "+r.URL.Path)
		dec := expfmt.NewDecoder(r.Body, expfmt.ResponseFormat(r.Header))
		for {
			var mf dto.MetricFamily
			if err := dec.Decode(&mf); err != nil {
				if !errors.Is(err, io.EOF) {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				break
			}
			families[mf.GetName()] = &mf
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer gw.Close()

	r := runBinary(t, context.Background(), "--store", url, "--keep-last", "1", "--dry-run", "--metrics-push", gw.URL, "--shard", "0/1")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stderr, "warning")
	mu.Lock()
	defer mu.Unlock()
	// The Pushgateway client writes grouping labels in map order: either order
	// names the same group.
	require.Len(t, paths, 1)
	require.Contains(t, []string{
		"POST /metrics/job/transcript-compact/shard/0/shards/1",
		"POST /metrics/job/transcript-compact/shards/1/shard/0",
	}, paths[0])
	byLabel := func(name string) map[string]float64 {
		mf := families[name]
		require.NotNil(t, mf, name)
		out := map[string]float64{}
		for _, m := range mf.GetMetric() {
			out[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
		return out
	}
	rs := byLabel("transcript_compact_retention_sessions")
	require.Equal(t, 3.0, rs["examined"])
	require.Equal(t, 2.0, rs["marked"])
	require.Equal(t, 0.0, rs["deleted"])
	require.Equal(t, 1.0, byLabel("transcript_compact_sessions")["listed"], "the sessions retention would mark are not compacted")
	require.Equal(t, 1.0, families["transcript_compact_dry_run"].GetMetric()[0].GetGauge().GetValue())
	require.NotNil(t, families["transcript_compact_last_success_timestamp_seconds"])

	r = runBinary(t, context.Background(), "--store", url, "--metrics-push", "http://127.0.0.1:1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "warning: --metrics-push: ")
}
