package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// compactRounds is how many rounds item 7 alternates the store's compaction and
// its floor in. Each round takes its share of the sessions and the side that goes
// first changes every round, as items 4 and 11 interleave theirs: a stall of the
// server, or the bucket slowing as the run deletes, falls on both sides alike
// instead of on whichever ran second.
const compactRounds = 5

// runCompact is item 7: Store.CompactAll over the fleet's sessions (DeleteAtOnce, so
// the run deletes its inputs too), Parallel sessions at a time, as
// cmd/transcript-compact runs it: one recursive listing feeds the sessions to the
// workers. The baseline is the bucket-level floor of the same work: per session one
// LIST, a GET of every segment, one PUT of their concatenation and one batch DELETE
// of the segments read, without decoding, verifying, merging, encoding or marks.
// Both work on byte-identical copies of the fleet's sessions made before they are
// timed: the store's under one agent per round (so that each round's CompactAll
// lists only that round's sessions, as the floor lists only its own), the floor's
// as raw objects. The two alternate in compactRounds rounds; each side's rate is
// the median of its rounds' (sessions over the round's time).
func runCompact(ctx context.Context, e *env) (ItemResult, error) {
	var res ItemResult
	sz := e.cfg.Sizes
	counted, err := countBucket(e.bucket)
	if err != nil {
		return res, err
	}
	store, err := openFleet(ctx, e, counted, &res)
	if err != nil {
		return res, err
	}
	defer store.Close()
	sids, err := store.ListSessions(ctx, "", fleetAgent)
	if err != nil {
		return res, err
	}
	if len(sids) != sz.Sessions {
		return res, fmt.Errorf("listed %d sessions, want %d", len(sids), sz.Sessions)
	}
	rounds := min(compactRounds, len(sids))
	parts := make([][]string, rounds)
	for i, sid := range sids {
		r := i * rounds / len(sids)
		parts[r] = append(parts[r], sid)
	}
	roundAgent := func(r int) string { return fmt.Sprintf("compact-r%d", r) }
	sessionPrefix := func(agent, sid string) string {
		return path.Join(store.Prefix(), transcript.DefaultNamespace, agent, sid) + "/"
	}
	fleetPrefix := func(sid string) string { return sessionPrefix(fleetAgent, sid) }
	copyPrefix := func(sid string) string { return e.key("raw", "compact-in", sid) + "/" }
	var copied int64
	for r, part := range parts {
		storePrefix := func(sid string) string { return sessionPrefix(roundAgent(r), sid) }
		n, err := copySessions(ctx, e.bucket, part, fleetPrefix, copyPrefix, storePrefix)
		if err != nil {
			return res, fmt.Errorf("setup: %w", err)
		}
		copied += n
	}
	res.Notes = append(res.Notes, fmt.Sprintf("setup: copied %d segments twice, for the floor to read and delete and for the store to compact, in %d rounds",
		copied, rounds))

	var floorBytes, in, out, segsIn atomic.Int64
	var errs errList
	// Each side's rounds: summed for the log, and per session for the rate,
	// the median of the rounds' (so one round that a stall of the server hit
	// does not decide the row).
	var floorD, d time.Duration
	var floorPer, storePer []time.Duration
	var c counts
	floorRound := func(r int) error {
		dr, err := timeIt(func() error {
			g, gctx := errgroup.WithContext(ctx)
			g.SetLimit(sz.Parallel)
			for _, sid := range parts[r] {
				g.Go(func() error {
					n, err := floorCompact(gctx, e.bucket, copyPrefix(sid), e.key("raw", "compact", sid))
					floorBytes.Add(n)
					return err
				})
			}
			return g.Wait()
		})
		floorD += dr
		floorPer = append(floorPer, dr/time.Duration(len(parts[r])))
		if err != nil {
			return fmt.Errorf("floor: %w", err)
		}
		return nil
	}
	storeRound := func(r int) error {
		cr, err := counted.measure(func() error {
			dr, err := timeIt(func() error {
				return store.CompactAll(ctx, "", roundAgent(r), sz.Parallel, transcript.CompactOptions{DeleteDelay: transcript.DeleteAtOnce}, nil,
					func(_ transcript.TranscriptRef, result transcript.CompactResult, err error) {
						if err != nil {
							errs.add(err)
							return
						}
						in.Add(result.BytesIn())
						out.Add(result.BytesOut())
						segsIn.Add(int64(result.SegmentsIn()))
					})
			})
			d += dr
			storePer = append(storePer, dr/time.Duration(len(parts[r])))
			if err == nil {
				err = errs.err()
			}
			return err
		})
		c = c.add(cr)
		return err
	}
	for r := range rounds {
		first, second := floorRound, storeRound
		if r%2 == 1 {
			first, second = storeRound, floorRound
		}
		if err := first(r); err != nil {
			return res, err
		}
		if err := second(r); err != nil {
			return res, err
		}
	}
	if want := int64(sz.Sessions * sz.SessionSegments); segsIn.Load() != want {
		return res, fmt.Errorf("compacted %d segments, want %d", segsIn.Load(), want)
	}
	e.logf("floor: %d sessions in %v; compaction: %d sessions in %v, %s (%d rounds, alternated)", len(sids), floorD, len(sids), d, breakdown(c), rounds)
	n := float64(len(sids))
	rate, floorRate := 1/medianOf(storePer).Seconds(), 1/medianOf(floorPer).Seconds()
	res.Rows = append(res.Rows,
		row(7, "compaction throughput", "sessions/s", rate, "floor: LIST + parallel GETs + 1 PUT + 1 batch DELETE per session", floorRate, true,
			fmt.Sprintf("%d sessions × %d segments, parallelism %d; DeleteAtOnce; %d rounds alternated with the floor, median of the rounds; summed: %.3g s against %.3g s; requests per session: %s",
				len(sids), sz.SessionSegments, sz.Parallel, rounds, d.Seconds(), floorD.Seconds(), breakdown(scaled(c, 1/n)))),
		row(7, "compaction throughput (stored bytes in)", "MB/s", float64(in.Load())/n*rate/mb, "floor (same bytes)", float64(floorBytes.Load())/n*floorRate/mb, true,
			fmt.Sprintf("%.1f MB in → %.1f MB out", float64(in.Load())/mb, float64(out.Load())/mb)))
	return res, nil
}

// errList collects errors from concurrent callbacks.
type errList struct {
	mu   sync.Mutex
	errs []error
}

func (l *errList) add(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, err)
}

func (l *errList) err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return errors.Join(l.errs...)
}

// floorCompact is the floor's compaction of one session: it lists the segments
// under prefix, fetches them DefaultReadConcurrency at a time (as Compact does),
// stores their concatenation under out with one PUT and deletes them with batch
// requests. It returns the bytes stored.
func floorCompact(ctx context.Context, b bucket.Bucket, prefix, out string) (int64, error) {
	var keys []string
	if err := b.List(ctx, bucket.ListOptions{Prefix: prefix}, func(o bucket.ObjectInfo) error {
		keys = append(keys, o.Key)
		return nil
	}); err != nil {
		return 0, err
	}
	parts := make([][]byte, len(keys))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(transcript.DefaultReadConcurrency)
	for i, k := range keys {
		g.Go(func() error {
			var err error
			parts[i], err = getBytes(gctx, b, k)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	data := bytes.Join(parts, nil)
	if err := b.Put(ctx, out, bytes.NewReader(data), int64(len(data)), bucket.PutOptions{}); err != nil {
		return 0, err
	}
	return int64(len(data)), bucket.DeleteInBatches(ctx, b, keys)
}

// copySessions copies every object under from(sid) to the same relative key
// under each of to(sid), for each of sids, 16 objects at a time, and returns how
// many objects it read (each is stored once per destination).
func copySessions(ctx context.Context, b bucket.Bucket, sids []string, from func(sid string) string, to ...func(sid string) string) (int64, error) {
	var n atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for _, sid := range sids {
		var keys []string
		if err := b.List(gctx, bucket.ListOptions{Prefix: from(sid)}, func(o bucket.ObjectInfo) error {
			keys = append(keys, o.Key)
			return nil
		}); err != nil {
			return 0, errors.Join(err, g.Wait())
		}
		for _, k := range keys {
			g.Go(func() error {
				data, err := getBytes(gctx, b, k)
				if err != nil {
					return err
				}
				n.Add(1)
				for _, dst := range to {
					key := dst(sid) + strings.TrimPrefix(k, from(sid))
					if err := b.Put(gctx, key, bytes.NewReader(data), int64(len(data)), bucket.PutOptions{}); err != nil {
						return err
					}
				}
				return nil
			})
		}
	}
	return n.Load(), g.Wait()
}
