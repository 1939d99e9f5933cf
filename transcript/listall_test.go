package transcript_test

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
