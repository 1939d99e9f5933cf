package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/klauspost/compress/zstd"
	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// median runs fn once to warm up, then reps times, and returns the median duration.
func median(reps int, fn func() error) (time.Duration, error) {
	ds, err := medians(reps, fn)
	if err != nil {
		return 0, err
	}
	return ds[0], nil
}

// medians runs each of fns once to warm up, then reps rounds of all of them in
// turn, and returns each one's median duration. Interleaving puts a measurement
// and its baseline under the same conditions: whatever the server is doing in the
// background (deleting the inputs of a compaction, flushing its caches) falls on
// both alike instead of on whichever ran first.
func medians(reps int, fns ...func() error) ([]time.Duration, error) {
	ds, _, err := mediansCPU(reps, cpuMeter{}, fns...)
	return ds, err
}

// mediansCPU is medians that also returns each function's mean CPU time per
// call, read with m around each timed call (outside its time).
func mediansCPU(reps int, m cpuMeter, fns ...func() error) ([]time.Duration, []cpuCost, error) {
	for _, fn := range fns {
		if err := fn(); err != nil {
			return nil, nil, err
		}
	}
	ds := make([][]time.Duration, len(fns))
	costs := make([]cpuCost, len(fns))
	for range reps {
		for i, fn := range fns {
			before := m.read()
			d, err := timeIt(fn)
			if err != nil {
				return nil, nil, err
			}
			costs[i].add(before, m.read())
			ds[i] = append(ds[i], d)
		}
	}
	out := make([]time.Duration, len(fns))
	for i, d := range ds {
		out[i] = medianOf(d)
		costs[i] = costs[i].mean()
	}
	return out, costs, nil
}

// getAll is the baseline read: one GET of key, read to the end.
func getAll(ctx context.Context, b bucket.Reader, key string) error {
	rc, _, err := b.Get(ctx, key)
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = io.Copy(io.Discard, rc)
	return err
}

// getEach is the request floor of a read of objs: every object fetched with one
// GET and read to the end, limit at a time.
func getEach(ctx context.Context, b bucket.Reader, objs []transcript.SegmentObject, limit int) error {
	return eachObject(ctx, objs, limit, func(ctx context.Context, o transcript.SegmentObject) error {
		return getAll(ctx, b, o.Info.Key)
	})
}

// getDecodeEach is a plain client of objs: every object fetched with one GET and
// decoded by getDecode, limit at a time; no listing, no checks, nothing parsed or
// merged. zdec is shared, as a reader's decoder is.
func getDecodeEach(ctx context.Context, b bucket.Reader, zdec *zstd.Decoder, objs []transcript.SegmentObject, limit int) error {
	return eachObject(ctx, objs, limit, func(ctx context.Context, o transcript.SegmentObject) error {
		return getDecode(ctx, b, zdec, o.Info.Key, int(o.Meta.RawLen))
	})
}

// eachObject calls fn for every object of objs, limit at a time, and returns the
// first error (which cancels the context of the calls after it).
func eachObject(ctx context.Context, objs []transcript.SegmentObject, limit int, fn func(context.Context, transcript.SegmentObject) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	for _, o := range objs {
		g.Go(func() error { return fn(gctx, o) })
	}
	return g.Wait()
}

// listAll is the listing a cold read of ref must make before its GETs: every
// segment key of the session, checked to be the want segments stored.
func listAll(ctx context.Context, s *transcript.Store, ref transcript.TranscriptRef, want int) error {
	infos, err := s.ListSegments(ctx, ref)
	if err == nil && len(infos) != want {
		err = fmt.Errorf("%s: listed %d segments, want %d", ref, len(infos), want)
	}
	return err
}

// getDecode is a plain reader of one segment: one GET of key into memory, then
// zstd's DecodeAll of it (which skips the metadata frame, a skippable frame) into a
// buffer of the rawLen bytes it holds, on one core, after the body is in.
func getDecode(ctx context.Context, b bucket.Reader, zdec *zstd.Decoder, key string, rawLen int) error {
	data, err := getBytes(ctx, b, key)
	if err != nil {
		return err
	}
	_, err = zdec.DecodeAll(data, make([]byte, 0, rawLen))
	return err
}

// getBytes reads key whole with one GET.
func getBytes(ctx context.Context, b bucket.Reader, key string) ([]byte, error) {
	rc, _, err := b.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// putSegments stores objs with PutSegment, parallel at a time.
func putSegments(ctx context.Context, s *transcript.Store, objs []transcript.SegmentObject, parallel int) error {
	return eachObject(ctx, objs, parallel, func(ctx context.Context, o transcript.SegmentObject) error {
		return s.PutSegment(ctx, o.Info.Key, o.Data)
	})
}

// runOpen is item 4: ReadAll (list, parallel fetch, verify, union-merge) of one
// session of OpenTurns turns stored as 1, 10, 100 and 1,000 segments, against one GET
// of the same bytes stored as a single object; then the same after compacting the
// session into one segment, against one GET of that segment, cold (ReadAll) and
// warm (ReadAllKnown with the segments of an earlier open).
func runOpen(ctx context.Context, e *env) (ItemResult, error) {
	var res ItemResult
	sz := e.cfg.Sizes
	store, err := e.newStore(e.bucket, "open")
	if err != nil {
		return res, err
	}
	defer store.Close()
	w, err := transcript.NewWriter("bench")
	if err != nil {
		return res, err
	}
	// The plain client's decoder (getDecodeEach), zstd's defaults as in
	// openCompacted's plain reader.
	zdec, err := zstd.NewReader(nil)
	if err != nil {
		return res, err
	}
	defer zdec.Close()
	entries := flatten(session("open", 4, sz.OpenTurns))
	before := Series{Chart: "open", Name: "open (ReadAll)"}
	after := Series{Chart: "open", Name: "open after compaction"}
	get := Series{Chart: "open", Name: "one GET of the same bytes"}
	for _, n := range sz.OpenSegments {
		if n > len(entries) {
			continue
		}
		ref := transcript.TranscriptRef{AgentID: "open", SessionID: fmt.Sprintf("n%d", n)}
		var objs []transcript.SegmentObject
		var whole bytes.Buffer
		for _, part := range chunk(entries, n) {
			o, err := store.PrepareSegment(ref, part, w)
			if err != nil {
				return res, err
			}
			objs = append(objs, o)
			whole.Write(o.Data)
		}
		if err := putSegments(ctx, store, objs, 16); err != nil {
			return res, err
		}
		rawKey := e.key("raw", "open", ref.SessionID)
		if err := e.bucket.Put(ctx, rawKey, bytes.NewReader(whole.Bytes()), int64(whole.Len()), bucket.PutOptions{}); err != nil {
			return res, err
		}
		open := func() error {
			r, err := store.ReadAll(ctx, ref)
			if err == nil && len(r.Entries) != len(entries) {
				err = fmt.Errorf("%s: read %d entries, want %d", ref, len(r.Entries), len(entries))
			}
			return err
		}
		// The request floor (tRaw): the same objects fetched raw, as many at once as
		// the read fetches, with nothing decoded or merged. A cold reader cannot know
		// the keys without listing them, and the server spends CPU on the LIST that
		// the raw GETs do not pay for, so its cost alone (tList) is measured too. A
		// plain client (tPlain) fetches the same objects at the same concurrency and
		// decodes each body with zstd: the work of the raw GETs plus the session's
		// decompression, which the open cannot skip and which, where the reader
		// shares its cores with the server, the raw GETs leave no core for.
		limit := store.ReadConcurrency(len(objs))
		ts, cpu, err := mediansCPU(sz.OpenReps, e.cpuMeter(), open,
			func() error { return getAll(ctx, e.bucket, rawKey) },
			func() error { return getEach(ctx, e.bucket, objs, limit) },
			func() error { return listAll(ctx, store, ref, len(objs)) },
			func() error { return getDecodeEach(ctx, e.bucket, zdec, objs, limit) })
		if err != nil {
			return res, err
		}
		tOpen, tGet, tRaw, tList, tPlain := ts[0], ts[1], ts[2], ts[3], ts[4]
		e.logf("%d segments: open %v, GET %v, %d raw GETs %v, LIST %v, GETs + DecodeAll %v", n, tOpen, tGet, n, tRaw, tList, tPlain)
		note := fmt.Sprintf("%d turns, %.2f MB stored; median of %d, interleaved with the baselines; floor: the %d objects' raw GETs, %d at once, %.3g ms (%.3g× the GET; the open is %.3g× it); the session's LIST alone %.3g ms (the open is %.3g× the raw GETs plus the LIST); a plain client, the same GETs each followed by zstd DecodeAll of its body, %.3g ms (the open is %.3g× it, %.3g× it plus the LIST)",
			sz.OpenTurns, float64(whole.Len())/mb, sz.OpenReps, n, limit, ms(tRaw), ms(tRaw)/ms(tGet), ms(tOpen)/ms(tRaw),
			ms(tList), ms(tOpen)/(ms(tRaw)+ms(tList)), ms(tPlain), ms(tOpen)/ms(tPlain), ms(tOpen)/(ms(tPlain)+ms(tList))) +
			cpuNote("the open", cpu[0], "the raw GETs", cpu[2]) + cpuAlso("the plain client", cpu[4])
		res.Rows = append(res.Rows, row(4, fmt.Sprintf("open, %d segment(s)", n), "ms", ms(tOpen), "one GET of the same bytes", ms(tGet), false, note))
		before.X, before.Y = append(before.X, float64(n)), append(before.Y, ms(tOpen))
		get.X, get.Y = append(get.X, float64(n)), append(get.Y, ms(tGet))
		if n < transcript.DefaultMinSegments {
			continue
		}
		rows, tOpen2, err := openCompacted(ctx, e, store, ref, n, len(entries), open)
		if err != nil {
			return res, err
		}
		res.Rows = append(res.Rows, rows...)
		after.X, after.Y = append(after.X, float64(n)), append(after.Y, ms(tOpen2))
	}
	res.Series = append(res.Series, before, after, get)
	return res, nil
}

// openCompacted compacts ref (n segments of nEntries entries, opened cold by
// open) into one segment and measures, interleaved, its open cold and warm (ReadAllKnown with
// the segments of an earlier open) against one GET of the compacted segment and
// a plain reader of it. It returns the rows and the cold open's median.
func openCompacted(ctx context.Context, e *env, store *transcript.Store, ref transcript.TranscriptRef, n, nEntries int, open func() error) ([]Row, time.Duration, error) {
	reps := e.cfg.Sizes.OpenReps
	var rows []Row
	cr, err := store.Compact(ctx, ref, transcript.CompactOptions{DeleteDelay: transcript.DeleteAtOnce})
	if err != nil {
		return nil, 0, err
	}
	if cr.SegmentsOut() == 0 {
		return nil, 0, fmt.Errorf("%s: compaction wrote nothing", ref)
	}
	outKey := cr.Compactions[len(cr.Compactions)-1].Output.Key
	// A plain reader (tFloor): the GET, then zstd's DecodeAll of the body (with
	// no checksum, split or merge, but no overlap of the two either).
	zdec, err := zstd.NewReader(nil)
	if err != nil {
		return nil, 0, err
	}
	meta, err := store.ReadSegmentMeta(ctx, outKey)
	if err != nil {
		return nil, 0, err
	}
	rawLen := int(meta.RawLen)
	// A warm reader (tWarm): one that knows the session's segments from an
	// earlier open, so its GETs start with the LIST (ReadAllKnown).
	first, err := store.ReadAll(ctx, ref)
	if err != nil {
		return nil, 0, err
	}
	warm := func() error {
		r, err := store.ReadAllKnown(ctx, ref, first.Segments)
		if err == nil && len(r.Entries) != nEntries {
			err = fmt.Errorf("%s: warm read %d entries, want %d", ref, len(r.Entries), nEntries)
		}
		return err
	}
	// A reader with a segment cache (tCached) that opened the session before:
	// its open lists the session and takes the segment from the cache.
	cachedStore, err := transcript.New(transcript.Config{Bucket: e.bucket, Prefix: e.key("open"),
		SegmentCache: transcript.NewSegmentCache(256 << 20)})
	if err != nil {
		return nil, 0, err
	}
	defer cachedStore.Close()
	cached := func() error {
		r, err := cachedStore.ReadAll(ctx, ref)
		if err == nil && len(r.Entries) != nEntries {
			err = fmt.Errorf("%s: cached read %d entries, want %d", ref, len(r.Entries), nEntries)
		}
		return err
	}
	ts, cpu, err := mediansCPU(reps, e.cpuMeter(), open,
		func() error { return getAll(ctx, e.bucket, outKey) },
		func() error { return getDecode(ctx, e.bucket, zdec, outKey, rawLen) },
		warm, cached)
	zdec.Close()
	if err != nil {
		return nil, 0, err
	}
	tOpen2, tGet2, tFloor, tWarm, tCached := ts[0], ts[1], ts[2], ts[3], ts[4]
	e.logf("%d segments compacted: open %v, GET %v, GET + DecodeAll %v, warm open %v, open from a segment cache %v", n, tOpen2, tGet2, tFloor, tWarm, tCached)
	rows = append(rows, row(4, fmt.Sprintf("open after compacting %d segments", n), "ms", ms(tOpen2), "one GET of the compacted segment", ms(tGet2), false,
		fmt.Sprintf("%d → %d segment(s), %.2f MB; a plain reader, the GET then zstd DecodeAll of it: %.3g ms (%.3g× the GET; the open is %.3g× it)",
			cr.SegmentsIn(), cr.SegmentsOut(), float64(cr.BytesOut())/mb, ms(tFloor), ms(tFloor)/ms(tGet2), ms(tOpen2)/ms(tFloor))+
			cpuNote("the open", cpu[0], "the plain reader", cpu[2])))
	rows = append(rows, row(4, fmt.Sprintf("warm open after compacting %d segments", n), "ms", ms(tWarm), "one GET of the compacted segment", ms(tGet2), false,
		fmt.Sprintf("ReadAllKnown with the segments of an earlier open: their GETs start with the LIST; %.3g× the plain reader; median of %d, interleaved with the rows above",
			ms(tWarm)/ms(tFloor), reps)))
	rows = append(rows, row(4, fmt.Sprintf("warm open from a segment cache after compacting %d segments", n), "ms", ms(tCached), "one GET of the compacted segment", ms(tGet2), false,
		fmt.Sprintf("ReadAll through a store whose segment cache (Config.SegmentCache) holds the segment from an earlier open: one LIST, no GET; %.3g× the plain reader; median of %d, interleaved with the rows above",
			ms(tCached)/ms(tFloor), reps)))
	return rows, tOpen2, nil
}

func ms(d time.Duration) float64 { return d.Seconds() * 1000 }
