package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
)

// runSync is items 9 and 10.
//
// Item 9: a replica's per-turn sync cost. A session of N one-turn segments (no
// compaction), written a turn a minute as a runtime does (its keys carry those
// times), is restored by a replica; then, each turn, another writer stores one
// segment and the replica runs Pull + Flush (what a runtime behind a load
// balancer does before every turn); the sessions take their turns in turn, so
// that every length is measured under the same server conditions. Requests and the mean time per
// turn at each N (the mean includes the full listings ReadNew runs every
// transcript.DefaultReconcileEvery syncs), against the turn at the smallest N; and,
// for comparison, the full read (Store.ReadAll) that Pull did before
// it read incrementally.
//
// Item 10: Watch latency. A repository session of WatchSegments segments is
// watched with a poll interval of WatchInterval; another writer appends one entry
// at a time and the time from its Append returning to Watch delivering it is
// measured.
func runSync(ctx context.Context, e *env) (ItemResult, error) {
	var res ItemResult
	if err := runTurnSync(ctx, e, &res); err != nil {
		return res, err
	}
	if err := runWatchLatency(ctx, e, &res); err != nil {
		return res, err
	}
	return res, nil
}

// syncCase is one session length of runTurnSync.
type syncCase struct {
	n     int
	ref   transcript.TranscriptRef
	turns [][][]byte
	tree  *sessiontree.Tree
	ds    []time.Duration
	reqs  counts
}

// newSyncCase stores the first n turns of a session of n+reps+1 turns as another
// replica would have written them, a minute apart, and restores a tree from them.
func newSyncCase(ctx context.Context, e *env, store *transcript.Store, w *transcript.Writer, n, reps int) (*syncCase, error) {
	c := &syncCase{n: n, ref: transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: "sync", SessionID: fmt.Sprintf("n%d", n)}}
	c.turns = session(c.ref.SessionID, 9, n+reps+1)
	hist, err := transcript.New(transcript.Config{Bucket: e.bucket, Prefix: e.key("sync"),
		Now: minutes(time.Now().Add(-time.Duration(n+1) * time.Minute))})
	if err != nil {
		return nil, err
	}
	var objs []transcript.SegmentObject
	for _, t := range c.turns[:n] {
		o, err := hist.PrepareSegment(c.ref, t, w)
		if err != nil {
			return nil, err
		}
		objs = append(objs, o)
	}
	err = putSegments(ctx, store, objs, 16)
	if cerr := hist.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	cfg := sessiontree.Config{Root: e.tmp, Store: store, NoSync: true}
	if c.tree, _, err = sessiontree.Restore(ctx, cfg, sessiontree.Identity{}, c.ref.AgentID, c.ref.SessionID); err != nil {
		return nil, err
	}
	if err := c.tree.Flush(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

func runTurnSync(ctx context.Context, e *env, res *ItemResult) error {
	sz := e.cfg.Sizes
	counted, err := countBucket(e.bucket)
	if err != nil {
		return err
	}
	store, err := e.newStore(counted, "sync")
	if err != nil {
		return err
	}
	defer store.Close()
	w, err := transcript.NewWriter("other-replica")
	if err != nil {
		return err
	}
	// Every session is set up first; then the turns of all of them are measured
	// round-robin, so that whatever the server does meanwhile (its scanner,
	// deletes of an earlier item) falls on every length alike instead of on
	// whichever ran at that moment: the ratio compares the lengths, not two
	// stretches of time.
	var cases []*syncCase
	for _, n := range sz.SyncLengths {
		c, err := newSyncCase(ctx, e, store, w, n, sz.SyncReps)
		if err != nil {
			return err
		}
		cases = append(cases, c)
	}
	for i := range sz.SyncReps + 1 {
		for _, c := range cases {
			turn := c.turns[c.n+i]
			if _, err := store.AppendSegment(ctx, c.ref, turn, w); err != nil {
				return err
			}
			var d time.Duration
			reqs, err := counted.measure(func() (err error) {
				d, err = timeIt(func() error {
					rep, err := c.tree.Pull(ctx)
					if err == nil && rep.Added != len(turn) {
						err = fmt.Errorf("%s: sync added %d entries, want %d", c.ref, rep.Added, len(turn))
					}
					if err != nil {
						return err
					}
					return c.tree.Flush(ctx)
				})
				return err
			})
			if err != nil {
				return err
			}
			if i > 0 { // the first turn warms up
				c.ds, c.reqs = append(c.ds, d), add(c.reqs, reqs)
			}
		}
	}
	var base time.Duration
	series := Series{Chart: "sync", Name: "per-turn sync (Pull + Flush)"}
	for _, c := range cases {
		n, ref, ds, reqs := c.n, c.ref, c.ds, c.reqs
		var sum time.Duration
		for _, d := range ds {
			sum += d
		}
		turn := sum / time.Duration(len(ds))
		med := medianOf(ds) // sorts ds
		if base == 0 {
			base = turn
		}
		full, err := median(1, func() error {
			_, err := store.ReadAll(ctx, ref)
			return err
		})
		if err != nil {
			return err
		}
		list, err := median(3, func() error {
			_, err := store.ListSegments(ctx, ref)
			return err
		})
		if err != nil {
			return err
		}
		perTurn := scaled(reqs, 1/float64(len(ds)))
		e.logf("sync at %d segments: turn mean %v, median %v, max %v (%s; %d requests in %d turns), full LIST %v; full read %v",
			n, turn, med, ds[len(ds)-1], breakdown(perTurn), reqs.Requests(), len(ds), list, full)
		res.Rows = append(res.Rows,
			row(9, fmt.Sprintf("per-turn sync, %d segments", n), "ms", ms(turn),
				fmt.Sprintf("the turn at %d segments", sz.SyncLengths[0]), ms(base), false,
				fmt.Sprintf("mean of %d turns, full listings included, the lengths' turns taken in turn (median %.1f ms, max %.1f ms); requests: %d in %d turns (%s per turn); a full LIST: %.1f ms; the full read it replaces (ReadAll): %.1f ms",
					len(ds), ms(med), ms(ds[len(ds)-1]), reqs.Requests(), len(ds), breakdown(perTurn), ms(list), ms(full))),
			row(9, fmt.Sprintf("requests per turn, %d segments", n), "requests", float64(perTurn.Requests()), "", 0, false, breakdown(perTurn)))
		series.X, series.Y = append(series.X, float64(n)), append(series.Y, ms(turn))
	}
	res.Series = append(res.Series, series)
	return nil
}

// minutes returns a Now that starts at start and moves a minute forward on each
// call: the wall clock of a session written a turn a minute.
func minutes(start time.Time) func() time.Time {
	next := start
	return func() time.Time {
		t := next
		next = next.Add(time.Minute)
		return t
	}
}

func runWatchLatency(ctx context.Context, e *env, res *ItemResult) error {
	sz := e.cfg.Sizes
	store, err := e.newStore(e.bucket, "watch")
	if err != nil {
		return err
	}
	defer store.Close()
	owner := repository.Owner{Tenant: "bench", User: "bench"}
	newRepo := func(name string) (*repository.Repository, error) {
		w, err := transcript.NewWriter(name)
		if err != nil {
			return nil, err
		}
		return repository.New(store, owner, repository.Config{Writer: w, WatchInterval: sz.WatchInterval})
	}
	writer, err := newRepo("writer")
	if err != nil {
		return err
	}
	defer writer.Close()
	watcher, err := newRepo("watcher")
	if err != nil {
		return err
	}
	defer watcher.Close()
	s, err := writer.Create(ctx, repository.CreateOptions{ID: "watched"})
	if err != nil {
		return err
	}
	gen := newGen("watched", 10)
	for range sz.WatchSegments {
		if err := s.Append(ctx, gen.next()...); err != nil {
			return err
		}
	}
	ws, err := watcher.Open(ctx, "watched")
	if err != nil {
		return err
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	arrived := make(chan time.Time, 1)
	done := make(chan error, 1)
	go func() {
		done <- ws.Watch(wctx, func(entries []sessiontree.Entry) error {
			arrived <- time.Now()
			return nil
		})
	}()
	// The watcher polls on a ticker, so an append made right after a delivery
	// would land just after a poll and wait nearly a whole interval every time.
	// A runtime appends whenever its turn ends: each append here waits a random
	// part of the interval first, so appends fall at every phase of the poll.
	phase := rand.New(rand.NewPCG(10, 0x3a7c))
	var ds []time.Duration
	for range sz.WatchAppends {
		select {
		case <-time.After(time.Duration(phase.Int64N(int64(sz.WatchInterval)))):
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := s.Append(ctx, gen.next()...); err != nil {
			return err
		}
		sent := time.Now()
		select {
		case at := <-arrived:
			ds = append(ds, at.Sub(sent))
		case <-time.After(time.Minute):
			return fmt.Errorf("watch delivered nothing within a minute")
		case err := <-done:
			return fmt.Errorf("watch ended: %w", err)
		}
	}
	cancel()
	<-done
	slices.Sort(ds)
	lat := ds[len(ds)/2]
	e.logf("watch latency: median %v, max %v (poll every %v, %d segments)", lat, ds[len(ds)-1], sz.WatchInterval, sz.WatchSegments)
	res.Rows = append(res.Rows, row(10, "Watch latency (append returned → delivered)", "ms", ms(lat),
		"half the poll interval (the expected wait for the next poll)", ms(sz.WatchInterval/2), false,
		fmt.Sprintf("median of %d appends, max %.1f ms; session of %d segments, poll every %v, no compaction",
			len(ds), ms(ds[len(ds)-1]), sz.WatchSegments+len(ds), sz.WatchInterval)))
	return nil
}
