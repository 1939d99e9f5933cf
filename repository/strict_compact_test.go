package repository_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// appendChain appends n entries to strict session s, each a child of the head,
// retrying when another writer moved the head first, and returns their ids in
// the order they committed.
func appendChain(ctx context.Context, s *repository.Session, name string, n int) ([]string, error) {
	var out []string
	for k := 0; k < n; {
		head := s.Head()
		id := fmt.Sprintf("%s-%05d", name, k)
		err := s.AppendIf(ctx, head, msg(id, head, id))
		if errors.Is(err, repository.ErrStaleHead) {
			continue // the handle holds the new head now
		}
		if err != nil {
			return out, fmt.Errorf("append %s: %w", id, err)
		}
		out = append(out, id)
		k++
	}
	return out, nil
}

// headSize returns the size of the stored head object of session s.
func headSize(t *testing.T, e *env, s *repository.Session) int {
	t.Helper()
	data, _, err := e.bucket.GetWithETag(t.Context(), sessionPrefix(s)+transcript.HeadName)
	require.NoError(t, err)
	return len(data)
}

// TestRepository_StrictCompactedWhileAppending: a strict session appended to
// 10,000 times by two clients while the compaction job (Store.Compact, what
// transcript-compact runs) compacts it over and over loses no append, never
// shows a reader fewer entries or another order than it saw before, keeps its
// head object small, and opens after a last compaction with two requests (the
// head and the one segment it names). Under the race detector, which is there
// to find races rather than to show scale, each client appends 1,000 times.
func TestRepository_StrictCompactedWhileAppending(t *testing.T) {
	perClient := 5000
	if raceEnabled {
		perClient = 1000
	}
	cb := newCountingBucket(membucket.New())
	e := newEnv(t, cb)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	s, err := e.repo(alice).Create(ctx, repository.CreateOptions{ID: "long", Cwd: "/w", Strict: true})
	require.NoError(t, err)

	var wg sync.WaitGroup
	stop := make(chan struct{})
	compactErr := make(chan error, 1)
	wg.Go(func() { // the compaction job
		defer close(compactErr)
		for runs := 0; ; runs++ {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			_, err := e.store.Compact(ctx, s.Ref(), transcript.CompactOptions{MinSegments: 8, DeleteDelay: transcript.DeleteAtOnce})
			if err != nil {
				compactErr <- fmt.Errorf("compaction %d: %w", runs, err)
				return
			}
		}
	})
	readErr := make(chan error, 1)
	reader, err := e.repo(alice).Open(ctx, "long")
	require.NoError(t, err)
	wg.Go(func() { // a reader that must never see a session without what it saw
		defer close(readErr)
		var seen []string
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			entries, err := reader.Entries(ctx)
			if errors.Is(err, transcript.ErrVanished) {
				// A compaction every 5 ms that deletes its inputs at once (no
				// delete delay, unlike any real job) can outrun a slow reader's
				// retries: it reports so instead of answering, and reads again.
				continue
			}
			if err != nil {
				readErr <- err
				return
			}
			got := ids(entries)
			if len(got) < len(seen) || !slices.Equal(got[:len(seen)], seen) {
				readErr <- fmt.Errorf("a read of %d entries does not extend the %d read before", len(got), len(seen))
				return
			}
			seen = got
		}
	})

	clients := []*repository.Session{s}
	c2, err := e.repo(alice).Open(ctx, "long")
	require.NoError(t, err)
	clients = append(clients, c2)
	committed := make([][]string, len(clients))
	errs := make([]error, len(clients))
	sizes := make([][]int, len(clients))
	var cw sync.WaitGroup
	for i, c := range clients {
		cw.Go(func() {
			for k := range perClient / 500 {
				got, err := appendChain(ctx, c, fmt.Sprintf("c%d-%02d", i, k), 500)
				committed[i] = append(committed[i], got...)
				if err != nil {
					errs[i] = err
					return
				}
				sizes[i] = append(sizes[i], headSize(t, e, c))
			}
		})
	}
	cw.Wait()
	close(stop)
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	require.NoError(t, <-compactErr)
	require.NoError(t, <-readErr)

	before, err := reader.Entries(ctx)
	require.NoError(t, err)
	require.Len(t, before, 2*perClient)
	held := map[string]bool{}
	for _, id := range ids(before) {
		held[id] = true
	}
	for _, c := range committed {
		require.Len(t, c, perClient)
		for _, id := range c {
			require.True(t, held[id], "acknowledged append %s is there", id)
		}
	}
	for i, sz := range sizes {
		// Without compaction the head would name 10,000 segments (over 600 KB);
		// with it, the level-0 segments appended since the last run and O(levels).
		require.Less(t, slices.Max(sz), 64<<10, "client %d: head sizes %v", i, sz)
	}

	_, err = e.store.Compact(ctx, s.Ref(), transcript.CompactOptions{Full: true, DeleteDelay: transcript.DeleteAtOnce})
	require.NoError(t, err)
	require.Less(t, headSize(t, e, s), 1024, "the head of a compacted session names one segment")
	cb.take()
	opened, err := e.repo(alice).Open(ctx, "long")
	require.NoError(t, err)
	n := cb.take()
	require.LessOrEqual(t, n["list"]+n["get"]+n["put"], 3, "open after compaction: %v", n)
	require.NoError(t, opened.Err())
	after, err := opened.Entries(ctx)
	require.NoError(t, err)
	require.Equal(t, ids(before), ids(after), "order unchanged")
	require.Equal(t, reader.Head(), opened.Head())
	info, err := opened.Info(ctx)
	require.NoError(t, err)
	page, err := e.repo(alice).ListPage(ctx, repository.ListOptions{})
	require.NoError(t, err)
	require.Equal(t, []repository.SessionInfo{info}, page.Sessions)
	require.Equal(t, 2*perClient, info.Entries)
}

// TestRepository_StrictAppendRequestsFlat: the requests an append sends do not
// grow with the session while the compaction job keeps compacting it (every 50
// appends here): the last 500 of 2,000 appends send as many as the first 500,
// and the head names about as many segments after 2,000 appends as after 500.
// (Their latency is a performance figure: BenchmarkAppendStrictCompacted.)
func TestRepository_StrictAppendRequestsFlat(t *testing.T) {
	const appends, window, every = 2000, 500, 50
	cb := newCountingBucket(membucket.New())
	e := newEnv(t, cb)
	ctx := t.Context()
	s, err := e.repo(alice).Create(ctx, repository.CreateOptions{ID: "flat", Strict: true})
	require.NoError(t, err)
	requests := make([]int, appends)
	named := map[int]int{}
	parent := ""
	for k := range appends {
		if k%every == 0 {
			h, err := e.store.ReadHead(ctx, s.Ref())
			require.NoError(t, err)
			named[k] = len(h.Segments)
			_, err = e.store.Compact(ctx, s.Ref(), transcript.CompactOptions{MinSegments: 8})
			require.NoError(t, err)
		}
		cb.take()
		id := fmt.Sprintf("e%05d", k)
		require.NoError(t, s.Append(ctx, msg(id, parent, "x")))
		parent = id
		n := cb.take()
		requests[k] = n["get"] + n["put"] + n["list"]
	}
	sum := func(r []int) (n int) {
		for _, x := range r {
			n += x
		}
		return n
	}
	first, last := sum(requests[:window]), sum(requests[appends-window:])
	require.LessOrEqual(t, last, first+first/100, "requests of the first and last %d appends: %d, %d", window, first, last)
	require.LessOrEqual(t, named[appends-every], named[window]+named[window]/2, "segments the head names: %v", named)
}
