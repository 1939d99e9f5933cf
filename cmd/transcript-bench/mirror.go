package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
)

// S3 Standard list prices in us-east-1 (USD per request), the assumption of item 8.
// DELETE is free; HEAD costs what GET does.
const (
	pricePutList = 0.005 / 1000
	priceGet     = 0.0004 / 1000
)

// cost prices the requests of c.
func cost(c counts) float64 {
	return float64(c.Put+c.Replace+c.List)*pricePutList + float64(c.Get+c.Stat)*priceGet
}

func scaled(c counts, f float64) counts {
	r := func(n int64) int64 { return int64(float64(n)*f + 0.5) }
	return counts{Get: r(c.Get), Stat: r(c.Stat), List: r(c.List), Put: r(c.Put),
		Delete: r(c.Delete), Replace: r(c.Replace), BytesUp: r(c.BytesUp)}
}

func add(a, b counts) counts {
	return counts{Get: a.Get + b.Get, Stat: a.Stat + b.Stat, List: a.List + b.List, Put: a.Put + b.Put,
		Delete: a.Delete + b.Delete, Replace: a.Replace + b.Replace, BytesUp: a.BytesUp + b.BytesUp}
}

func breakdown(c counts) string {
	return fmt.Sprintf("PUT %d, GET %d, HEAD %d, LIST %d, DELETE %d", c.Put+c.Replace, c.Get, c.Stat, c.List, c.Delete)
}

// runMirror is items 3 and 8. One session of MirrorTurns turns goes through a
// SessionTree, flushed once per turn, once with the segment Mirror and once with
// the legacy full-file mirror, each over a counting wrapper of the --store bucket.
// Item 3 compares bytes uploaded and requests; item 8 counts the requests of
// writing, opening and compacting the session and prices them.
func runMirror(ctx context.Context, e *env) (ItemResult, error) {
	var res ItemResult
	turns := e.cfg.Sizes.MirrorTurns
	batches := session("mirror", 3, turns)
	batches[0] = batches[0][1:] // the tree writes its own header
	step := max(1, turns/50)

	// Segment mirror.
	segB, err := countBucket(e.bucket)
	if err != nil {
		return res, err
	}
	store, err := e.newStore(segB, "mirror")
	if err != nil {
		return res, err
	}
	defer store.Close()
	w, err := transcript.NewWriter("bench")
	if err != nil {
		return res, err
	}
	m, err := mirror.New(mirror.Config{Store: store, Writer: w, OutboxDir: filepath.Join(e.tmp, "outbox"), BlockWhenFull: true})
	if err != nil {
		return res, err
	}
	segWall, err := timeIt(func() error {
		return flushSession(ctx, sessiontree.Config{Root: filepath.Join(e.tmp, "seg"), Uploader: m, NoSync: true}, batches, step,
			func(int) error { return nil })
	})
	if err == nil {
		err = m.AwaitQuiescence(ctx)
	}
	if cerr := m.Close(ctx); err == nil {
		err = cerr
	}
	if err != nil {
		return res, fmt.Errorf("segment mirror: %w", err)
	}
	segCurve, err := segmentCurve(ctx, store, step)
	if err != nil {
		return res, err
	}
	segWall = max(segWall, time.Nanosecond)
	segWrite, err := segB.Counts()
	if err != nil {
		return res, err
	}
	e.logf("segment mirror: %d turns, %d bytes, %d requests, %v", turns, segWrite.BytesUp, segWrite.Requests(), segWall)

	// Legacy mirror.
	legB, err := countBucket(e.bucket)
	if err != nil {
		return res, err
	}
	legacy := &mirror.Legacy{Bucket: legB, Prefix: e.key("legacy")}
	legCurve := Series{Chart: "mirror", Name: "legacy full-file mirror"}
	legWall, err := timeIt(func() error {
		return flushSession(ctx, sessiontree.Config{Root: filepath.Join(e.tmp, "legacy"), Uploader: legacy, NoSync: true}, batches, step,
			func(turn int) error {
				c, err := legB.Counts()
				legCurve.X, legCurve.Y = append(legCurve.X, float64(turn)), append(legCurve.Y, float64(c.BytesUp))
				return err
			})
	})
	if err != nil {
		return res, fmt.Errorf("legacy mirror: %w", err)
	}
	legWrite, err := legB.Counts()
	if err != nil {
		return res, err
	}
	e.logf("legacy mirror: %d turns, %d bytes, %d requests, %v", turns, legWrite.BytesUp, legWrite.Requests(), legWall)
	res.Series = append(res.Series, segCurve, legCurve)

	note := fmt.Sprintf("%d turns, one flush per turn", turns)
	res.Rows = append(res.Rows,
		row(3, fmt.Sprintf("bytes uploaded, %d-turn session", turns), "MB", float64(segWrite.BytesUp)/mb, "legacy full-file mirror", float64(legWrite.BytesUp)/mb, false, note),
		row(3, fmt.Sprintf("requests, %d-turn session", turns), "requests", float64(segWrite.Requests()), "legacy full-file mirror", float64(legWrite.Requests()), false,
			"segments: "+breakdown(segWrite)+"; legacy: "+breakdown(legWrite)),
		row(3, fmt.Sprintf("wall time to upload a %d-turn session", turns), "s", segWall.Seconds(), "legacy full-file mirror", legWall.Seconds(), false,
			"segments: until AwaitQuiescence (async, 4 workers); legacy: synchronous in Flush"))

	rows, err := requestCosts(ctx, e, mirrorRun{store: store, seg: segB, leg: legB, turns: turns,
		entries: len(flatten(batches)) + 1, segWrite: segWrite, legWrite: legWrite})
	if err != nil {
		return res, err
	}
	res.Rows = append(res.Rows, rows...)
	return res, nil
}

// mirrorRun is what runMirror measured, for requestCosts.
type mirrorRun struct {
	store              *transcript.Store
	seg, leg           *counted // the segment store's bucket and the legacy mirror's
	turns, entries     int      // the session's turns, and its entries with the header
	segWrite, legWrite counts   // the requests of writing the session each way
}

// requestCosts is item 8: the requests of writing, opening and compacting the
// session of runMirror, per 1,000 turns, and their price.
func requestCosts(ctx context.Context, e *env, run mirrorRun) ([]Row, error) {
	ref := transcript.TranscriptRef{AgentID: "bench", SessionID: "mirror"}
	open := func() error {
		r, err := run.store.ReadAll(ctx, ref)
		if err == nil && len(r.Entries) != run.entries {
			err = fmt.Errorf("open read %d entries, want %d", len(r.Entries), run.entries)
		}
		return err
	}
	segOpen, err := run.seg.measure(open)
	if err != nil {
		return nil, err
	}
	segCompact, err := run.seg.measure(func() error {
		_, err := run.store.Compact(ctx, ref, transcript.CompactOptions{DeleteDelay: transcript.DeleteAtOnce})
		return err
	})
	if err != nil {
		return nil, err
	}
	segOpen2, err := run.seg.measure(open)
	if err != nil {
		return nil, err
	}
	legOpen, err := run.leg.measure(func() error {
		cKey, lKey := mirror.LegacyKeys(e.key("legacy"), ref.Norm())
		var errs []error
		for _, k := range []string{cKey, lKey} {
			rc, _, err := run.leg.Get(ctx, k)
			if err == nil {
				_, err = io.Copy(io.Discard, rc)
				rc.Close()
			}
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	})
	if err != nil {
		return nil, err
	}
	f := 1000 / float64(run.turns)
	scaleNote := ""
	if run.turns != 1000 {
		scaleNote = fmt.Sprintf("; measured at %d turns, scaled ×%.3g", run.turns, f)
	}
	sw, lw := scaled(run.segWrite, f), scaled(run.legWrite, f)
	// Opening the compacted session and the legacy files costs the same at any length.
	so, so2, sc, lo := scaled(segOpen, f), segOpen2, scaled(segCompact, f), legOpen
	segAll, legAll := add(add(sw, sc), so2), add(lw, lo)
	return []Row{
		row(8, "requests to write 1,000 turns", "requests", float64(sw.Requests()), "legacy full-file mirror", float64(lw.Requests()), false,
			"segments: "+breakdown(sw)+"; legacy: "+breakdown(lw)+scaleNote),
		row(8, "requests to open the session (no compaction)", "requests", float64(so.Requests()), "legacy: GET context + log file", float64(lo.Requests()), false,
			"segments: "+breakdown(so)+scaleNote),
		row(8, "requests to compact the session once", "requests", float64(sc.Requests()), "", 0, false,
			breakdown(sc)+" (DeleteAtOnce: marks and deletes in the same run)"+scaleNote),
		row(8, "requests to open the session after compaction", "requests", float64(so2.Requests()), "legacy: GET context + log file", float64(lo.Requests()), false,
			breakdown(so2)),
		row(8, "cost to write 1,000 turns", "USD", cost(sw), "legacy full-file mirror", cost(lw), false,
			"S3 Standard us-east-1: PUT/LIST $0.005 per 1,000, GET/HEAD $0.0004 per 1,000, DELETE free; transfer in free; storage not counted"),
		row(8, "cost to write 1,000 turns, compact once, open once", "USD", cost(segAll), "legacy: write + open", cost(legAll), false,
			"segments: "+breakdown(segAll)+"; legacy: "+breakdown(legAll)),
	}, nil
}

// segmentCurve returns the bytes the segment mirror had uploaded after every step
// turns: the running sum of the session's segment sizes in the writer's order (one
// segment per turn), as listed after the upload, so that sampling does not slow the
// asynchronous upload down.
func segmentCurve(ctx context.Context, store *transcript.Store, step int) (Series, error) {
	s := Series{Chart: "mirror", Name: "segment mirror"}
	infos, err := store.ListSegments(ctx, transcript.TranscriptRef{AgentID: "bench", SessionID: "mirror"})
	if err != nil {
		return s, err
	}
	slices.SortFunc(infos, func(a, b transcript.SegmentInfo) int { return cmp.Compare(a.Seq, b.Seq) })
	var sum int64
	for i, in := range infos {
		sum += in.Size
		if (i+1)%step == 0 || i == len(infos)-1 {
			s.X, s.Y = append(s.X, float64(i+1)), append(s.Y, float64(sum))
		}
	}
	return s, nil
}

// flushSession appends each batch to a new tree and flushes it, calling sample after
// every step turns and after the last.
func flushSession(ctx context.Context, cfg sessiontree.Config, batches [][][]byte, step int, sample func(turn int) error) error {
	tree, err := sessiontree.New(cfg, sessiontree.Identity{}, "bench", "mirror", sessiontree.HeaderOptions{})
	if err != nil {
		return err
	}
	for i, b := range batches {
		for _, en := range b {
			if _, err := tree.AppendRaw(en); err != nil {
				return err
			}
		}
		if err := tree.Flush(ctx); err != nil {
			return err
		}
		if (i+1)%step == 0 || i == len(batches)-1 {
			if err := sample(i + 1); err != nil {
				return err
			}
		}
	}
	return nil
}
