package transcript_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// TestRetain_KeepLastRanksCompactedByTheirEntries: an operator who compacts
// nightly and keeps each agent's N newest sessions must keep the sessions
// written last, whether the night's compaction merged them or not. A
// compacted segment's key time and LastModified are both the compaction's, so
// keep-last ranked every session compacted in one run as written at the
// compaction, ahead of sessions written since their last write but before the
// compaction that were not compacted (one segment): it marked the recent
// sessions and kept the long-dead ones. It now ranks a session whose newest
// segment is compacted by the newest origin key time its metadata frame
// records (one ranged GET of such sessions only), never later than the
// compacted segment's own times.
func TestRetain_KeepLastRanksCompactedByTheirEntries(t *testing.T) {
	ctx := t.Context()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := t0
	tick := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }

	mb := membucket.New()
	mb.SetClock(now)
	fc := newFetchCounter(mb)
	s, err := transcript.New(transcript.Config{Bucket: fc, Clock: transcript.NewClock(now)})
	require.NoError(t, err)
	defer s.Close()
	w, err := transcript.NewWriter("replica")
	require.NoError(t, err)
	ref := func(id string) transcript.TranscriptRef {
		return transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: id}
	}
	appendTo := func(id string, n int) {
		for i := range n {
			_, err := s.AppendSegment(ctx, ref(id), [][]byte{[]byte(`{"type":"session","version":3,"id":"` + id +
				`","timestamp":"2026-11-01T00:00:00.000Z","cwd":"/w","n":` + string(rune('0'+i)) + `}`)}, w)
			require.NoError(t, err)
			tick(time.Minute)
		}
	}
	// Two long-dead sessions with several segments each, a day apart; then,
	// days later, two recent sessions of one segment each (nothing to merge).
	appendTo("dead-a", 4)
	tick(24 * time.Hour)
	appendTo("dead-b", 4)
	tick(10 * 24 * time.Hour)
	appendTo("recent-a", 1)
	tick(time.Hour)
	appendTo("recent-b", 1)
	tick(time.Hour)
	// The night's compaction merges the dead sessions.
	for _, id := range []string{"dead-a", "dead-b"} {
		res, err := s.Compact(ctx, ref(id), transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce, Writer: w})
		require.NoError(t, err)
		require.Equal(t, 1, res.SegmentsOut(), "%s compacted", id)
	}
	tick(time.Hour)

	run := func(keep int) (marked []string, metaReads int) {
		fc.take()
		r := transcript.Retention{Rules: []transcript.RetentionRule{{Policy: transcript.RetentionPolicy{KeepLast: keep}}}}
		var mu sync.Mutex
		reported := 0
		require.NoError(t, s.Retain(context.WithoutCancel(ctx), "acme", "", &r, transcript.RetentionOptions{DryRun: true},
			func(res transcript.RetentionResult, err error) {
				require.NoError(t, err)
				mu.Lock()
				defer mu.Unlock()
				reported += res.RankReads
				if res.Action == transcript.RetentionMarked {
					marked = append(marked, res.Ref.SessionID)
				}
			}))
		_, metaReads = fc.take()
		require.Equal(t, metaReads, reported, "keep-last %d: the reads reported (RankReads)", keep)
		return marked, metaReads
	}
	tests := []struct {
		keep      int
		marked    []string
		metaReads int // ranged GETs of compacted segments' metadata
	}{
		{keep: 1, marked: []string{"dead-a", "dead-b", "recent-a"}, metaReads: 2},
		{keep: 2, marked: []string{"dead-a", "dead-b"}, metaReads: 2},
		{keep: 3, marked: []string{"dead-a"}, metaReads: 2},
		{keep: 4, marked: nil, metaReads: 0}, // no more sessions than kept: nothing to rank
	}
	for _, tt := range tests {
		marked, reads := run(tt.keep)
		require.ElementsMatch(t, tt.marked, marked, "keep-last %d", tt.keep)
		require.Equal(t, tt.metaReads, reads, "keep-last %d: metadata reads", tt.keep)
	}
}

// TestRetain_CompactionKeepsTheRanking: compacting sessions does not move
// them in keep-last's ranking, also a session whose last write resent entries
// it already held (a writer's retry): the compaction keeps one copy, with the
// earlier origin, but the session was written when the resend landed, and
// ranked so before the compaction.
func TestRetain_CompactionKeepsTheRanking(t *testing.T) {
	ctx := t.Context()
	var mu sync.Mutex
	clock := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	tick := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	mb := membucket.New()
	mb.SetClock(now)
	s, err := transcript.New(transcript.Config{Bucket: mb, Clock: transcript.NewClock(now)})
	require.NoError(t, err)
	defer s.Close()
	w, err := transcript.NewWriter("replica")
	require.NoError(t, err)
	ref := func(id string) transcript.TranscriptRef {
		return transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: id}
	}
	put := func(id, entry string) {
		_, err := s.AppendSegment(ctx, ref(id), [][]byte{[]byte(entry)}, w)
		require.NoError(t, err)
		tick(time.Minute)
	}
	header := func(id string) string {
		return `{"type":"session","version":3,"id":"` + id + `","timestamp":"2026-11-01T00:00:00.000Z","cwd":"/w"}`
	}
	msg := `{"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"2026-11-01T00:01:00.000Z","message":{"role":"user","content":"hi"}}`
	put("old", header("old"))
	put("old", msg)
	put("resend", header("resend"))
	put("resend", msg)
	tick(5 * 24 * time.Hour)
	put("mid", header("mid"))
	tick(3 * 24 * time.Hour)
	put("resend", msg) // the retry, days later: the same bytes
	tick(time.Hour)

	marked := func(keep int) []string {
		r := transcript.Retention{Rules: []transcript.RetentionRule{{Policy: transcript.RetentionPolicy{KeepLast: keep}}}}
		var out []string
		var mu sync.Mutex
		require.NoError(t, s.Retain(context.WithoutCancel(ctx), "acme", "", &r, transcript.RetentionOptions{DryRun: true},
			func(res transcript.RetentionResult, err error) {
				require.NoError(t, err)
				if res.Action == transcript.RetentionMarked {
					mu.Lock()
					out = append(out, res.Ref.SessionID)
					mu.Unlock()
				}
			}))
		return out
	}
	want := map[int][]string{1: {"old", "mid"}, 2: {"old"}}
	for keep, m := range want {
		require.ElementsMatch(t, m, marked(keep), "keep-last %d before the compaction", keep)
	}
	for _, id := range []string{"old", "resend"} {
		res, err := s.Compact(ctx, ref(id), transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce, Writer: w})
		require.NoError(t, err)
		require.Equal(t, 1, res.SegmentsOut(), "%s compacted", id)
	}
	tick(time.Hour)
	for keep, m := range want {
		require.ElementsMatch(t, m, marked(keep), "keep-last %d after the compaction", keep)
	}
}

// TestRetain_CompactedSkewedWriterRanksNoLaterThanItsCompaction: origin key
// times are the writers' clocks. A writer whose clock runs ahead cannot rank
// its compacted session after the compaction (its LastModified and key time,
// the bucket's and the compactor's clocks), so a session written since on an
// honest clock still outranks it.
func TestRetain_CompactedSkewedWriterRanksNoLaterThanItsCompaction(t *testing.T) {
	ctx := t.Context()
	var mu sync.Mutex
	clock := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	tick := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	ahead := func() time.Time { return now().Add(30 * 24 * time.Hour) }
	mb := membucket.New()
	mb.SetClock(now)
	honest, err := transcript.New(transcript.Config{Bucket: mb, Clock: transcript.NewClock(now)})
	require.NoError(t, err)
	defer honest.Close()
	fast, err := transcript.New(transcript.Config{Bucket: mb, Clock: transcript.NewClock(ahead)})
	require.NoError(t, err)
	defer fast.Close()
	w, err := transcript.NewWriter("replica")
	require.NoError(t, err)
	ref := func(id string) transcript.TranscriptRef {
		return transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: id}
	}
	put := func(s *transcript.Store, id string, n int) {
		for i := range n {
			_, err := s.AppendSegment(ctx, ref(id), [][]byte{[]byte(`{"type":"session","version":3,"id":"` + id +
				`","timestamp":"2026-11-01T00:00:00.000Z","cwd":"/w","n":` + string(rune('0'+i)) + `}`)}, w)
			require.NoError(t, err)
			tick(time.Minute)
		}
	}
	put(fast, "skewed", 2) // keys 30 days ahead
	tick(10 * 24 * time.Hour)
	res, err := honest.Compact(ctx, ref("skewed"), transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce, Writer: w})
	require.NoError(t, err)
	require.Equal(t, 1, res.SegmentsOut())
	tick(24 * time.Hour)
	put(honest, "later", 1)

	r := transcript.Retention{Rules: []transcript.RetentionRule{{Policy: transcript.RetentionPolicy{KeepLast: 1}}}}
	var marked []string
	var mmu sync.Mutex
	require.NoError(t, honest.Retain(ctx, "acme", "", &r, transcript.RetentionOptions{DryRun: true},
		func(res transcript.RetentionResult, err error) {
			require.NoError(t, err)
			if res.Action == transcript.RetentionMarked {
				mmu.Lock()
				marked = append(marked, res.Ref.SessionID)
				mmu.Unlock()
			}
		}))
	require.Equal(t, []string{"skewed"}, marked)
}

// failingRanges fails every ranged read with err.
type failingRanges struct {
	bucket.Bucket
	err error
}

func (f failingRanges) GetRange(context.Context, string, int64, int64) ([]byte, error) {
	return nil, f.err
}

// TestRetain_KeepLastRankReadFails: a metadata read that fails leaves
// keep-last undecided for the agent this run (a wrong rank would select
// another session): the session fails, with the error, the others of its
// agent are decided by max-age alone, a mark that only keep-last may select
// stays (it fails too), and the other agents are decided as ever. A segment
// collected since the listing ranks as listed.
func TestRetain_KeepLastRankReadFails(t *testing.T) {
	tests := []struct {
		name   string
		err    error
		marked []string
		failed map[string]string // session: error
	}{
		{"collected since the listing", bucket.ErrNotFound, []string{"coder/keeper", "coder/recent", "other/old"}, map[string]string{}},
		{"read fails", errors.New("connection reset"), []string{"other/old"}, map[string]string{
			"coder/dead":   "rank for keep-last: read metadata of ",
			"coder/marked": "keep-last could not rank agent coder this run",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			var mu sync.Mutex
			clock := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
			now := func() time.Time { mu.Lock(); defer mu.Unlock(); clock = clock.Add(time.Second); return clock }
			mb := membucket.New()
			mb.SetClock(now)
			s, err := transcript.New(transcript.Config{Bucket: mb, Clock: transcript.NewClock(now)})
			require.NoError(t, err)
			defer s.Close()
			w, err := transcript.NewWriter("replica")
			require.NoError(t, err)
			put := func(agent, id string, n int) {
				for i := range n {
					_, err := s.AppendSegment(ctx, transcript.TranscriptRef{Namespace: "acme", AgentID: agent, SessionID: id},
						[][]byte{[]byte(fmt.Sprintf(`{"type":"message","id":"0000000%d","parentId":null,"timestamp":"2026-11-01T00:00:00.000Z"}`, i))}, w)
					require.NoError(t, err)
				}
			}
			r := transcript.Retention{Rules: []transcript.RetentionRule{{Policy: transcript.RetentionPolicy{KeepLast: 1}}}}
			put("coder", "marked", 1)
			put("coder", "keeper", 1)
			// A real run marks "marked" (keep-last 1).
			require.NoError(t, s.Retain(ctx, "acme", "coder", &r, transcript.RetentionOptions{}, func(res transcript.RetentionResult, err error) {
				require.NoError(t, err)
			}))
			put("coder", "dead", 2)
			put("coder", "recent", 1)
			put("other", "old", 1)
			put("other", "new", 1)
			_, err = s.Compact(ctx, transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: "dead"},
				transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce, Writer: w})
			require.NoError(t, err)

			f, err := transcript.New(transcript.Config{Bucket: failingRanges{Bucket: mb, err: tt.err}, Clock: transcript.NewClock(now)})
			require.NoError(t, err)
			defer f.Close()
			var marked []string
			failed := map[string]string{}
			require.NoError(t, f.Retain(ctx, "acme", "", &r, transcript.RetentionOptions{DryRun: true}, func(res transcript.RetentionResult, err error) {
				mu.Lock()
				defer mu.Unlock()
				name := res.Ref.AgentID + "/" + res.Ref.SessionID
				if err != nil {
					failed[name] = err.Error()
				}
				if res.Action == transcript.RetentionMarked {
					marked = append(marked, name)
				}
			}))
			require.ElementsMatch(t, tt.marked, marked)
			require.Len(t, failed, len(tt.failed), "%v", failed)
			for name, msg := range tt.failed {
				require.Contains(t, failed[name], msg, name)
			}
		})
	}
}
