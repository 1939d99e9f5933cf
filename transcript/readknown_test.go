package transcript_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
)

// listGate is a bucket whose listings leave out the key hide, and, while armed,
// fail unless a GET has started since it was armed (waiting up to 30 s for one, a
// bound for a goroutine to be scheduled on a loaded machine under -race, not a
// measure of speed): what a read that lists before it fetches cannot pass.
type listGate struct {
	bucket.Bucket
	hide string
	mu   sync.Mutex
	got  chan struct{} // while armed: closed at the first GET since
}

func newListGate(inner bucket.Bucket) *listGate {
	return &listGate{Bucket: inner}
}

// arm makes the listings wait for a GET started from now on; disarm ends that.
func (g *listGate) arm() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.got = make(chan struct{})
}

func (g *listGate) disarm() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.got = nil
}

func (g *listGate) Get(ctx context.Context, key string) (rc io.ReadCloser, oi bucket.ObjectInfo, err error) {
	g.mu.Lock()
	if g.got != nil {
		select {
		case <-g.got:
		default:
			close(g.got)
		}
	}
	g.mu.Unlock()
	return g.Bucket.Get(ctx, key)
}

func (g *listGate) List(ctx context.Context, opts bucket.ListOptions, fn func(bucket.ObjectInfo) error) error {
	g.mu.Lock()
	got := g.got
	g.mu.Unlock()
	if got != nil {
		select {
		case <-got:
		case <-time.After(30 * time.Second):
			return errors.New("listed before any GET started")
		}
	}
	return g.Bucket.List(ctx, opts, func(oi bucket.ObjectInfo) error {
		if oi.Key == g.hide {
			return nil
		}
		return fn(oi)
	})
}

// TestReadAllKnown_SameAsReadAll reads a session with ReadAllKnown after it
// changed in each way a listing can show (nothing, a segment added, a known one
// no longer listed, known ones compacted away) and checks that it gives what
// ReadAll gives, with the requests it should cost.
func TestReadAllKnown_SameAsReadAll(t *testing.T) {
	type setup struct {
		s     *transcript.Store
		fb    *faultbucket.Bucket
		gate  *listGate
		known []transcript.SegmentInfo
	}
	cases := []struct {
		name string
		// change alters the session after the first read.
		change func(t *testing.T, st *setup)
		// gets is how many GETs ReadAllKnown sends (-1: not checked).
		gets int64
		want []string
	}{
		{"unchanged, compacted", func(t *testing.T, st *setup) {}, 1, []string{"a", "b", "c"}},
		{"a segment added", func(t *testing.T, st *setup) {
			_, err := st.s.AppendSegment(context.Background(), ref, [][]byte{entry("d", "c")}, newWriter(t, "w2"))
			require.NoError(t, err)
		}, 2, []string{"a", "b", "c", "d"}},
		{"a known segment not listed", func(t *testing.T, st *setup) {
			info, err := st.s.AppendSegment(context.Background(), ref, [][]byte{entry("d", "c")}, newWriter(t, "w2"))
			require.NoError(t, err)
			st.known = append(st.known, info)
			st.gate.hide = info.Key
		}, 2, []string{"a", "b", "c"}},
		{"known segments compacted away", func(t *testing.T, st *setup) {
			_, err := st.s.AppendSegment(context.Background(), ref, [][]byte{entry("d", "c")}, newWriter(t, "w2"))
			require.NoError(t, err)
			res, err := st.s.ReadAll(context.Background(), ref)
			require.NoError(t, err)
			st.known = res.Segments
			_, err = st.s.Compact(context.Background(), ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
			require.NoError(t, err)
		}, -1, []string{"a", "b", "c", "d"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			gate := newListGate(newBucket(t))
			fb := faultbucket.Wrap(gate)
			s := newStore(t, fb, transcript.Config{})
			w := newWriter(t, "w1")
			for _, batch := range [][][]byte{{entry("a", "")}, {entry("b", "a")}, {entry("c", "b")}} {
				_, err := s.AppendSegment(ctx, ref, batch, w)
				require.NoError(t, err)
			}
			_, err := s.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
			require.NoError(t, err)
			first, err := s.ReadAll(ctx, ref)
			require.NoError(t, err)
			st := &setup{s: s, fb: fb, gate: gate, known: first.Segments}
			c.change(t, st)

			want, err := s.ReadAll(ctx, ref)
			require.NoError(t, err)
			require.Equal(t, c.want, ids(want))
			fb.ResetCounts()
			gate.arm()
			got, err := s.ReadAllKnown(ctx, ref, st.known)
			gate.disarm()
			require.NoError(t, err)
			require.Equal(t, want.Raw(), got.Raw())
			require.Equal(t, ids(want), ids(got))
			require.Equal(t, want.Segments, got.Segments)
			if c.gets >= 0 {
				n := fb.Counts()
				require.Equal(t, int64(1), n.List, "one listing")
				require.Equal(t, c.gets, n.Get)
			}
		})
	}
}

// TestReadAllKnown_Errors: a known segment of another session is refused, and a
// session deleted since it was read is not found.
func TestReadAllKnown_Errors(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, newBucket(t), transcript.Config{})
	info, err := s.AppendSegment(ctx, ref, [][]byte{entry("a", "")}, newWriter(t, "w1"))
	require.NoError(t, err)
	other := ref
	other.SessionID = "s2"
	_, err = s.ReadAllKnown(ctx, other, []transcript.SegmentInfo{info})
	require.ErrorIs(t, err, transcript.ErrInvalidRef)

	require.NoError(t, s.Delete(ctx, ref))
	_, err = s.ReadAllKnown(ctx, ref, []transcript.SegmentInfo{info})
	require.ErrorIs(t, err, bucket.ErrNotFound)
	require.NotErrorIs(t, err, transcript.ErrVanished)
}
