package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
)

// TestJob_KeepLastAfterNightlyCompaction, on the directory backend and MinIO:
// an operator compacts every night and keeps each agent's 2 newest sessions.
// The sessions the night compacted (long dead) must not outrank the sessions
// written since their last write that had nothing to compact: the dry run
// marks the dead ones, and says what the ranking cost (one ranged read of
// each compacted session's metadata frame).
func TestJob_KeepLastAfterNightlyCompaction(t *testing.T) {
	for name, newURL := range stores() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			url := newURL(t)
			s := openStore(t, url)
			w, err := transcript.NewWriter("replica-1")
			require.NoError(t, err)
			ref := func(id string) transcript.TranscriptRef {
				return transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: id}
			}
			for _, id := range []string{"dead-a", "dead-b"} {
				appendEntries(t, s, ref(id), w, 3)
				time.Sleep(100 * time.Millisecond)
			}
			for _, id := range []string{"recent-a", "recent-b"} {
				appendEntries(t, s, ref(id), w, 1)
				time.Sleep(100 * time.Millisecond)
			}
			r := runBinary(t, ctx, "--store", url, "--min-segments", "2", "--delete-delay", "0")
			require.Equal(t, 0, r.code, r.stderr)
			time.Sleep(100 * time.Millisecond)

			args := []string{"--store", url, "--keep-last", "2", "--dry-run"}
			r = runBinary(t, ctx, append(args, "--json")...)
			require.Equal(t, 0, r.code, r.stderr)
			requireSchema(t, []byte(r.stdout), "transcript-compact")
			sum := r.summary(t)
			require.NotNil(t, sum.Retention)
			require.Equal(t, retentionSummary{SessionsExamined: 4, Marked: 2, RankReads: 2}, *sum.Retention)
			for i, id := range []string{"dead-b", "dead-a"} {
				require.Contains(t, r.stderr, fmt.Sprintf("retention plan acme/coder/%s: marked for deletion (keep-last 2: number %d by last write)", id, i+3))
			}
			r = runBinary(t, ctx, args...)
			require.Equal(t, 0, r.code, r.stderr)
			require.Contains(t, r.stdout, "retention: keep-last ranked the compacted sessions by their entries' writes: 2 ranged reads of compacted segments' metadata\n")
		})
	}
}
