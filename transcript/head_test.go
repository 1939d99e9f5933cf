package transcript_test

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

var (
	strictRef = transcript.TranscriptRef{Namespace: "acme", AgentID: "a", SessionID: "strict"}
	header    = []byte(`{"type":"session","version":3,"id":"strict","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}`)
)

func entryLine(id, parent string) []byte {
	p := "null"
	if parent != "" {
		p = `"` + parent + `"`
	}
	return []byte(`{"type":"message","id":"` + id + `","parentId":` + p + `}`)
}

// CreateSession writes the first segment and the head that commits it; a second
// create of the session finds it and writes nothing.
func TestStore_CreateSession(t *testing.T) {
	ctx := t.Context()
	for _, strict := range []bool{true, false} {
		s := newStore(t, membucket.New(), transcript.Config{})
		w := transcript.NewRandomWriter()
		_, err := s.ReadHead(ctx, strictRef)
		require.ErrorIs(t, err, bucket.ErrNotFound)
		ok, err := s.SessionExists(ctx, strictRef)
		require.NoError(t, err)
		require.False(t, ok)

		info, h, err := s.CreateSession(ctx, strictRef, [][]byte{header, entryLine("e1", "")}, w,
			transcript.CreateOptions{Strict: strict, Head: "e1"})
		require.NoError(t, err)
		ok, err = s.SessionExists(ctx, strictRef)
		require.NoError(t, err)
		require.True(t, ok)
		stored, err := s.ReadHead(ctx, strictRef)
		if !strict {
			require.ErrorIs(t, err, bucket.ErrNotFound)
			require.Equal(t, transcript.Head{}, h)
		} else {
			require.NoError(t, err)
			require.True(t, stored.Same(h))
			require.Equal(t, uint64(1), stored.Version)
			require.Equal(t, "e1", stored.Entry)
			require.True(t, stored.Commits(info.Key))
		}
		_, _, err = s.CreateSession(ctx, strictRef, [][]byte{header}, w, transcript.CreateOptions{Strict: strict})
		require.ErrorIs(t, err, bucket.ErrExists)
		infos, err := s.ListSegments(ctx, strictRef)
		require.NoError(t, err)
		require.Len(t, infos, 1, "the second create wrote nothing")
	}
}

// Of writers committing from one head, exactly one wins; the others' segments
// are deleted and their errors wrap ErrConflict. WriteHead from a stale head
// fails the same way.
func TestStore_CommitSegmentRace(t *testing.T) {
	ctx := t.Context()
	s := newStore(t, membucket.New(), transcript.Config{})
	_, h0, err := s.CreateSession(ctx, strictRef, [][]byte{header}, transcript.NewRandomWriter(), transcript.CreateOptions{Strict: true})
	require.NoError(t, err)
	const writers = 6
	type result struct {
		id   string
		head transcript.Head
		err  error
	}
	results := make(chan result, writers)
	for i := range writers {
		go func() {
			id := string(rune('a' + i))
			_, h, err := s.CommitSegment(ctx, strictRef, h0, [][]byte{entryLine(id, "")}, transcript.NewRandomWriter(), id, nil)
			results <- result{id, h, err}
		}()
	}
	won := 0
	for range writers {
		r := <-results
		if r.err != nil {
			require.ErrorIs(t, r.err, transcript.ErrConflict)
			continue
		}
		won++
		require.Equal(t, r.id, r.head.Entry)
	}
	require.Equal(t, 1, won)
	head, err := s.ReadHead(ctx, strictRef)
	require.NoError(t, err)
	require.Len(t, head.Segments, 2)
	infos, err := s.ListSegments(ctx, strictRef)
	require.NoError(t, err)
	require.Len(t, infos, 2, "the losers' segments are deleted")
	for _, in := range infos {
		require.True(t, head.Commits(in.Key))
	}
	_, err = s.WriteHead(ctx, strictRef, h0, h0.Commit(infos[0].Key, "x", nil))
	require.ErrorIs(t, err, transcript.ErrConflict)
	require.ErrorIs(t, err, bucket.ErrPreconditionFailed)
}

// loseHeadWrites is a bucket whose conditional writes take effect but answer an
// error while lose is set, as when the response is lost on the network.
type loseHeadWrites struct {
	bucket.Bucket
	lose atomic.Bool
}

var errLost = errors.New("response lost")

func (b *loseHeadWrites) PutIf(ctx context.Context, key string, r io.Reader, size int64, cond bucket.Cond) (string, error) {
	etag, err := b.Bucket.PutIf(ctx, key, r, size, cond)
	if err == nil && b.lose.Load() {
		return "", errLost
	}
	return etag, err
}

// A head write whose answer was lost but that took effect is a commit: the
// head read back names the segment. One that failed for another reason leaves
// the segment uncommitted, and DeleteUncommitted removes it once old enough.
func TestStore_CommitSegmentLostAnswer(t *testing.T) {
	ctx := t.Context()
	lb := &loseHeadWrites{Bucket: membucket.New()}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newStore(t, lb, transcript.Config{Now: func() time.Time { return now }})
	_, h0, err := s.CreateSession(ctx, strictRef, [][]byte{header}, transcript.NewRandomWriter(), transcript.CreateOptions{Strict: true})
	require.NoError(t, err)

	lb.lose.Store(true)
	info, h1, err := s.CommitSegment(ctx, strictRef, h0, [][]byte{entryLine("e1", "")}, transcript.NewRandomWriter(), "e1", nil)
	require.NoError(t, err)
	require.True(t, h1.Commits(info.Key))
	require.Equal(t, h0.Version+1, h1.Version)

	// The head moves on meanwhile: the stale write fails, and it is not a
	// conflict, so the segment is left for DeleteUncommitted.
	lb.lose.Store(false)
	fail := &failHeadWrites{Bucket: lb}
	sf := newStore(t, fail, transcript.Config{Now: func() time.Time { return now }})
	_, _, err = sf.CommitSegment(ctx, strictRef, h1, [][]byte{entryLine("e2", "e1")}, transcript.NewRandomWriter(), "e2", nil)
	require.ErrorIs(t, err, errLost)
	infos, err := s.ListSegments(ctx, strictRef)
	require.NoError(t, err)
	require.Len(t, infos, 3)
	var loose transcript.SegmentInfo
	for _, in := range infos {
		if !h1.Commits(in.Key) {
			loose = in
		}
	}
	require.NotEmpty(t, loose.Key)
	n, err := s.DeleteUncommitted(ctx, strictRef, loose.Time.Add(-time.Nanosecond))
	require.NoError(t, err)
	require.Zero(t, n, "a segment created after the cutoff is kept")
	n, err = s.DeleteUncommitted(ctx, strictRef, loose.Time.Add(time.Second))
	require.NoError(t, err)
	require.Equal(t, 1, n)
	res, err := s.View(h1.Committed()).ReadAll(ctx, strictRef)
	require.NoError(t, err)
	require.Len(t, res.Entries, 2, "the header and e1")
}

// failHeadWrites fails every conditional write without writing.
type failHeadWrites struct{ bucket.Bucket }

func (b *failHeadWrites) PutIf(context.Context, string, io.Reader, int64, bucket.Cond) (string, error) {
	return "", errLost
}
