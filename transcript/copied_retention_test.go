package transcript_test

import (
	"bytes"
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// TestRetain_CopyRanksAsTheOriginal: an operator who restores a bucket from a
// copy (rclone, mc mirror) and runs the usual retention job on it must see it
// select the sessions it selects on the original. A copy stamps every object
// with the time it copied it (S3 LastModified), in whatever order the tool
// copies. Keep-last, ranking an agent's sessions by the newest LastModified
// of their segments, ranked them by copy order and marked the newest sessions
// for deletion instead of the oldest. It now ranks by the newest, over a
// session's segments, of the earlier of LastModified and the time in the
// segment's key, which the copy keeps (the writer's clock: here the store's
// Clock reads the test's).
func TestRetain_CopyRanksAsTheOriginal(t *testing.T) {
	ctx := t.Context()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := t0
	tick := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }

	orig := membucket.New()
	orig.SetClock(now)
	s, err := transcript.New(transcript.Config{Bucket: orig, Clock: transcript.NewClock(now)})
	require.NoError(t, err)
	defer s.Close()
	w, err := transcript.NewWriter("replica")
	require.NoError(t, err)
	for _, id := range []string{"older", "newer"} { // a day apart
		ref := transcript.TranscriptRef{Namespace: "acme", AgentID: "coder", SessionID: id}
		_, err := s.AppendSegment(ctx, ref, [][]byte{
			[]byte(`{"type":"session","version":3,"id":"` + id + `","timestamp":"2026-11-01T00:00:00.000Z","cwd":"/w"}`)}, w)
		require.NoError(t, err)
		tick(24 * time.Hour)
	}

	// The copy: ten days later, the newer session's objects first.
	tick(10 * 24 * time.Hour)
	cp := membucket.New()
	cp.SetClock(now)
	var keys []string
	require.NoError(t, orig.List(ctx, bucket.ListOptions{}, func(oi bucket.ObjectInfo) error {
		keys = append(keys, oi.Key)
		return nil
	}))
	for i := range keys { // key order, as rclone lists: "newer" before "older"
		rc, _, err := orig.Get(ctx, keys[i])
		require.NoError(t, err)
		data, err := io.ReadAll(rc)
		require.NoError(t, rc.Close())
		require.NoError(t, err)
		require.NoError(t, cp.Put(ctx, keys[i], bytes.NewReader(data), int64(len(data)), bucket.PutOptions{}))
		tick(time.Second)
	}
	c, err := transcript.New(transcript.Config{Bucket: cp, Clock: transcript.NewClock(now)})
	require.NoError(t, err)
	defer c.Close()

	marked := func(s *transcript.Store) []string {
		r := transcript.Retention{Rules: []transcript.RetentionRule{{Policy: transcript.RetentionPolicy{KeepLast: 1}}}}
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
	want := marked(s)
	require.Equal(t, []string{"older"}, want, "the original keeps its newest session")
	require.Equal(t, want, marked(c), "the copy selects what the original selects")
}
