package transcript_test

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// peakGets records the most GETs in flight at once. A GET waits (at most wait)
// for more to join it, so that a run allowing more than the bound reaches it.
type peakGets struct {
	bucket.Bucket
	bound int
	wait  time.Duration

	mu       sync.Mutex
	inflight int
	peak     int
	joined   chan struct{}
}

func (p *peakGets) Get(ctx context.Context, key string) (io.ReadCloser, bucket.ObjectInfo, error) {
	p.mu.Lock()
	p.inflight++
	p.peak = max(p.peak, p.inflight)
	if p.inflight >= p.bound {
		close(p.joined)
		p.joined = make(chan struct{})
	}
	joined := p.joined
	p.mu.Unlock()
	select {
	case <-joined:
	case <-time.After(p.wait):
	case <-ctx.Done():
	}
	defer func() {
		p.mu.Lock()
		p.inflight--
		p.mu.Unlock()
	}()
	return p.Bucket.Get(ctx, key)
}

func TestStore_ForEachListedSession_SharesGETs(t *testing.T) {
	tests := []struct {
		name     string
		parallel int
		sessions int
		segments int
	}{
		// Alone, a read of 200 segments would fetch 25 at once (readLimit).
		{"large sessions", 2, 3, 200},
		{"more sessions than workers", 3, 7, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			bound := tt.parallel * transcript.DefaultReadConcurrency
			pb := &peakGets{Bucket: membucket.New(), bound: bound, wait: 20 * time.Millisecond, joined: make(chan struct{})}
			s := newStore(t, pb, transcript.Config{})
			w := newWriter(t, "w")
			want := map[string]int{}
			for i := range tt.sessions {
				ref := transcript.TranscriptRef{AgentID: "a", SessionID: fmt.Sprintf("s%d", i)}
				parent := ""
				for j := range tt.segments {
					id := fmt.Sprintf("%s-%d", ref.SessionID, j)
					_, err := s.AppendSegment(ctx, ref, [][]byte{entry(id, parent)}, w)
					require.NoError(t, err)
					parent = id
				}
				want[ref.SessionID] = tt.segments
			}
			var mu sync.Mutex
			got := map[string]int{}
			err := s.ForEachListedSession(ctx, "", "a", tt.parallel, func(ctx context.Context, l *transcript.Listed) error {
				res, err := l.ReadAll(ctx, l.Ref())
				if err != nil {
					return err
				}
				mu.Lock()
				got[l.Ref().SessionID] = len(res.Entries)
				mu.Unlock()
				return nil
			})
			require.NoError(t, err)
			require.Equal(t, want, got)
			require.LessOrEqual(t, pb.peak, bound, "GETs in flight across sessions")
		})
	}
}

// aheadGets records the sessions whose segments were asked for, signals the
// first GET of session `watch`, and answers "not found" to the first GET of
// the key `vanish` (a segment that vanished after the listing).
type aheadGets struct {
	bucket.Bucket
	watch  string
	seen   chan struct{} // closed at the first GET of watch
	vanish string

	mu       sync.Mutex
	sessions map[string]bool
	vanished bool
}

func (a *aheadGets) Get(ctx context.Context, key string) (io.ReadCloser, bucket.ObjectInfo, error) {
	info, err := transcript.ParseKey("", key)
	if err == nil {
		a.mu.Lock()
		sid := info.Ref.SessionID
		if sid == a.watch && !a.sessions[sid] {
			close(a.seen)
		}
		a.sessions[sid] = true
		gone := key == a.vanish && !a.vanished
		a.vanished = a.vanished || gone
		a.mu.Unlock()
		if gone {
			return nil, bucket.ObjectInfo{}, fmt.Errorf("get %s: %w", key, bucket.ErrNotFound)
		}
	}
	return a.Bucket.Get(ctx, key)
}

func (a *aheadGets) fetched() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.sessions)
}

// TestStore_ForEachListedSessionAhead_FetchesWhileSessionsWork: with one session
// at a time, the next listed session is fetched while fn still works on the
// first (ForEachListedSession would not fetch it before fn returns), at most
// about parallel sessions ahead; every session reads lean exactly as ReadLean
// reads it alone, including one that prefetch leaves out and one whose fetch
// ahead found a segment gone (it lists again).
func TestStore_ForEachListedSessionAhead_FetchesWhileSessionsWork(t *testing.T) {
	ctx := context.Background()
	const sessions, segments = 6, 3
	ab := &aheadGets{Bucket: membucket.New(), watch: "s1", seen: make(chan struct{}), sessions: map[string]bool{}}
	s := newStore(t, ab, transcript.Config{})
	w := newWriter(t, "w")
	for i := range sessions {
		ref := transcript.TranscriptRef{AgentID: "a", SessionID: fmt.Sprintf("s%d", i)}
		parent := ""
		for j := range segments {
			id := fmt.Sprintf("%s-%d", ref.SessionID, j)
			seg, err := s.AppendSegment(ctx, ref, [][]byte{entry(id, parent)}, w)
			require.NoError(t, err)
			if i == 3 && j == 1 {
				ab.vanish = seg.Key
			}
			parent = id
		}
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var mu sync.Mutex
	got := map[string][]string{}
	prefetch := func(ref transcript.TranscriptRef) bool { return ref.SessionID != "s4" }
	err := s.ForEachListedSessionAhead(ctx, "", "a", 1, prefetch, func(ctx context.Context, l *transcript.Listed) error {
		if l.Ref().SessionID == "s0" {
			select {
			case <-ab.seen:
			case <-time.After(10 * time.Second):
				return fmt.Errorf("s1 was not fetched while s0 was being worked on")
			}
			// s0, s1 queued, s2 fetched while the listing waits to queue it.
			if n := ab.fetched(); n > 3 {
				return fmt.Errorf("%d sessions fetched while working on the first", n)
			}
		}
		res, err := l.ReadLean(ctx, l.Ref())
		if err != nil {
			return err
		}
		var raws []string
		for i := range res.Len() {
			raws = append(raws, string(res.Raw(i)))
		}
		mu.Lock()
		got[l.Ref().SessionID] = raws
		mu.Unlock()
		return nil
	})
	require.NoError(t, err)
	require.True(t, ab.vanished, "a fetch ahead found a segment gone")
	require.Len(t, got, sessions)
	for i := range sessions {
		ref := transcript.TranscriptRef{AgentID: "a", SessionID: fmt.Sprintf("s%d", i)}
		res, err := s.ReadLean(ctx, ref)
		require.NoError(t, err)
		var want []string
		for k := range res.Len() {
			want = append(want, string(res.Raw(k)))
		}
		require.Len(t, want, segments)
		require.Equal(t, want, got[ref.SessionID], ref.SessionID)
	}
}

// TestStore_ForEachListedSessionAhead_LeavesTheCacheAlone: a session read lean
// after a fetch ahead, through a store with a segment cache, leaves the cache
// as it was: a ReadAll through the cache afterwards gives what a store without
// one gives (the lean merge drops the origins and index it took from each
// segment, which a cached segment would share with every later read).
func TestStore_ForEachListedSessionAhead_LeavesTheCacheAlone(t *testing.T) {
	ctx := context.Background()
	b := membucket.New()
	plain := newStore(t, b, transcript.Config{})
	w := newWriter(t, "w")
	ref := transcript.TranscriptRef{AgentID: "a", SessionID: "s"}
	appendChain(t, plain, ref, w, "e", "", 4)
	_, err := plain.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
	require.NoError(t, err)
	// A late level-0 segment whose origin sorts before the compacted entries'.
	early := transcript.NewClock(func() time.Time { return time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC) })
	_, err = newStore(t, b, transcript.Config{Clock: early}).AppendSegment(ctx, ref, [][]byte{entry("late", "")}, w)
	require.NoError(t, err)
	want, err := plain.ReadAll(ctx, ref)
	require.NoError(t, err)

	cached := newStore(t, b, transcript.Config{SegmentCache: transcript.NewSegmentCache(1 << 20)})
	err = cached.ForEachListedSessionAhead(ctx, "", "a", 1, func(transcript.TranscriptRef) bool { return true },
		func(ctx context.Context, l *transcript.Listed) error {
			res, err := l.ReadLean(ctx, l.Ref())
			if err == nil && res.Len() != len(want.Entries) {
				err = fmt.Errorf("read lean %d entries, want %d", res.Len(), len(want.Entries))
			}
			return err
		})
	require.NoError(t, err)
	got, err := cached.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.Equal(t, want.Entries, got.Entries)
}
