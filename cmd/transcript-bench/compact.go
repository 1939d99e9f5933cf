package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
)

// runCompact is item 7: Store.CompactAll over the fleet's sessions (DeleteAtOnce, so
// the run deletes its inputs too), Parallel sessions at a time, as
// cmd/transcript-compact runs it: one recursive listing feeds the sessions to the
// workers. The baseline
// is the bucket-level floor of the same work: per session one LIST, a GET of every
// segment and one PUT of their concatenation, without decoding, verifying,
// merging, encoding, marks or deletes.
func runCompact(ctx context.Context, e *env) (ItemResult, error) {
	var res ItemResult
	sz := e.cfg.Sizes
	counted := faultbucket.Wrap(e.bucket)
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
	forEach := func(fn func(ctx context.Context, sid string) error) (time.Duration, error) {
		return timeIt(func() error {
			g, gctx := errgroup.WithContext(ctx)
			g.SetLimit(sz.Parallel)
			for _, sid := range sids {
				g.Go(func() error { return fn(gctx, sid) })
			}
			return g.Wait()
		})
	}
	var floorBytes atomic.Int64
	floorD, err := forEach(func(ctx context.Context, sid string) error {
		var keys []string
		p := path.Join(store.Prefix(), transcript.DefaultNamespace, fleetAgent, sid) + "/"
		if err := e.bucket.List(ctx, bucket.ListOptions{Prefix: p}, func(o bucket.ObjectInfo) error {
			keys = append(keys, o.Key)
			return nil
		}); err != nil {
			return err
		}
		// Compact fetches a session's segments DefaultReadConcurrency at a time; so
		// does the floor.
		parts := make([][]byte, len(keys))
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(transcript.DefaultReadConcurrency)
		for i, k := range keys {
			g.Go(func() error {
				rc, _, err := e.bucket.Get(gctx, k)
				if err != nil {
					return err
				}
				defer rc.Close()
				parts[i], err = io.ReadAll(rc)
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
		buf := bytes.NewBuffer(bytes.Join(parts, nil))
		floorBytes.Add(int64(buf.Len()))
		return e.bucket.Put(ctx, e.key("raw", "compact", sid), bytes.NewReader(buf.Bytes()), int64(buf.Len()), bucket.PutOptions{})
	})
	if err != nil {
		return res, fmt.Errorf("floor: %w", err)
	}
	e.logf("floor: %d sessions in %v", len(sids), floorD)
	counted.ResetCounts()
	var in, out, segsIn atomic.Int64
	var errs errList
	d, err := timeIt(func() error {
		return store.CompactAll(ctx, "", fleetAgent, sz.Parallel, transcript.CompactOptions{DeleteDelay: transcript.DeleteAtOnce}, nil,
			func(_ transcript.TranscriptRef, r transcript.CompactResult, err error) {
				if err != nil {
					errs.add(err)
					return
				}
				in.Add(r.BytesIn())
				out.Add(r.BytesOut())
				segsIn.Add(int64(r.SegmentsIn()))
			})
	})
	if err == nil {
		err = errs.err()
	}
	if err != nil {
		return res, err
	}
	if want := int64(sz.Sessions * sz.SessionSegments); segsIn.Load() != want {
		return res, fmt.Errorf("compacted %d segments, want %d", segsIn.Load(), want)
	}
	c := counted.Counts()
	e.logf("compaction: %d sessions in %v, %s", len(sids), d, breakdown(c))
	n := float64(len(sids))
	res.Rows = append(res.Rows,
		row(7, "compaction throughput", "sessions/s", n/d.Seconds(), "floor: LIST + parallel GETs + 1 PUT per session", n/floorD.Seconds(), true,
			fmt.Sprintf("%d sessions × %d segments, parallelism %d; DeleteAtOnce; requests per session: %s", len(sids), sz.SessionSegments, sz.Parallel,
				breakdown(scaled(c, 1/n)))),
		row(7, "compaction throughput (stored bytes in)", "MB/s", float64(in.Load())/mb/d.Seconds(), "floor (same bytes)", float64(floorBytes.Load())/mb/floorD.Seconds(), true,
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
