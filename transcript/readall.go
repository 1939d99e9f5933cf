package transcript

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/trace"
	"slices"
	"strings"
	"time"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// ReadAll reads every segment of ref and union-merges their entries (see MergeResult).
// A session without segments gives an error wrapping bucket.ErrNotFound. If a listed segment
// vanishes before it is fetched (a compaction replaced it), ReadAll lists again after
// a pause (relistPause), at most Config.MaxRelists times, then it fails with
// ErrVanished (which a reader must not take for a missing session).
func (s *Store) ReadAll(ctx context.Context, ref TranscriptRef) (*MergeResult, error) {
	ctx, task := trace.NewTask(ctx, "transcript.ReadAll")
	defer task.End()
	return readResolved(ctx, s, ref, func() (*MergeResult, error) {
		return relisting(ctx, s, ref, func() (*MergeResult, error) { return s.readStreamed(ctx, ref) })
	})
}

// ErrVanished is wrapped when a read kept meeting listed segments that were gone
// by the time it fetched them (a compaction deleting them), Config.MaxRelists+1
// times in a row. It does not wrap bucket.ErrNotFound: the session exists.
var ErrVanished = errors.New("segments keep vanishing while read")

// readListed lists ref's segments and calls read with them. A session without
// segments gives an error wrapping bucket.ErrNotFound; when read meets a listed segment
// that is gone (bucket.ErrNotFound), it lists again, at most Config.MaxRelists times,
// then fails with ErrVanished. The payloads are put back into the result
// (readResolved).
func readListed[T asStored](ctx context.Context, s *Store, ref TranscriptRef, read func([]SegmentInfo) (T, error)) (T, error) {
	return readListedAfter(ctx, s, ref, "", read)
}

// readListedAfter is readListed over the segments whose keys sort after the
// relative key after ("" for all of them). An incremental listing (after set)
// that finds nothing is not a missing session: read is called with no segments.
func readListedAfter[T asStored](ctx context.Context, s *Store, ref TranscriptRef, after string, read func([]SegmentInfo) (T, error)) (T, error) {
	return readResolved(ctx, s, ref, func() (T, error) { return listAndRead(ctx, s, ref, after, read) })
}

// listAndRead is readListedAfter with the entries as stored.
func listAndRead[T any](ctx context.Context, s *Store, ref TranscriptRef, after string, read func([]SegmentInfo) (T, error)) (T, error) {
	return relisting(ctx, s, ref, func() (T, error) {
		var zero T
		var infos []SegmentInfo
		var err error
		head := false
		region := trace.StartRegion(ctx, "list segments")
		if after == "" {
			infos, err = s.listSegmentsHead(ctx, ref, "", &head)
		} else {
			infos, err = s.listSegmentsAfter(ctx, ref, sessionPrefix(s.cfg.Prefix, ref)+after)
		}
		region.End()
		switch {
		case err != nil:
			return zero, listFailed{err}
		case len(infos) == 0 && after == "":
			return zero, errNoSegments
		}
		out, err := read(infos)
		if err == nil && after == "" {
			out, err = healDangling(ctx, s, ref, infos, out, read)
		}
		if n, ok := any(out).(headNoter); ok && err == nil && after == "" {
			n.noteHead(head)
		}
		return out, err
	})
}

// dangler is a read result that can tell whether it holds an entry whose
// parentId names no entry of it.
type dangler interface{ hasDangling() bool }

// healDangling ends a read of a whole session (out, read from the listing
// infos): when out holds an entry without its parent, it lists the session
// once more, and when that listing shows segments that infos lacks, reads again
// from both listings with read. A listing is no snapshot: one made of several
// requests (S3 answers a thousand keys per request) does not list again what an
// earlier request covered, and MinIO lists a request's keys as it walks them,
// so a segment that landed behind the listing (a PUT in flight, an outbox
// draining after an outage, a replica whose clock is behind) is missed, while
// its child, appended after it had landed and sorting later, is listed. The
// listing sent now, after the child was seen, shows the parent: it landed
// before the child was written. A session whose entries lack their parents for
// good (a segment lost) costs one LIST more per read.
func healDangling[T any](ctx context.Context, s *Store, ref TranscriptRef, infos []SegmentInfo, out T, read func([]SegmentInfo) (T, error)) (T, error) {
	if d, ok := any(out).(dangler); !ok || !d.hasDangling() {
		return out, nil
	}
	again, err := s.listSegmentsAfter(ctx, ref, "")
	if err != nil {
		var zero T
		return zero, listFailed{err}
	}
	listed := make(map[string]bool, len(infos))
	for _, in := range infos {
		listed[in.Key] = true
	}
	var added []SegmentInfo
	for _, in := range again {
		if !listed[in.Key] {
			added = append(added, in)
		}
	}
	if len(added) == 0 {
		return out, nil
	}
	all := append(slices.Clone(infos), added...)
	slices.SortFunc(all, func(a, b SegmentInfo) int { return strings.Compare(a.Key, b.Key) })
	return read(all)
}

// headNoter is a read result that records whether the whole listing it was read
// from showed the session's strict head object (Increment.HeadListed).
type headNoter interface{ noteHead(listed bool) }

// relisting makes attempts at reading ref, each of which lists the session
// and reads what it lists, until one succeeds or fails for good. An attempt
// whose listing failed says so with listFailed, and one that listed no segment
// with errNoSegments (the session is not found); one that met a listed segment
// gone (bucket.ErrNotFound) is made again after relistPause, at most
// Config.MaxRelists times, and then fails with ErrVanished.
func relisting[T any](ctx context.Context, s *Store, ref TranscriptRef, attempt func() (T, error)) (T, error) {
	var zero T
	ref, visible, err := s.checkRef(ref)
	if err != nil {
		return zero, err
	}
	if !visible {
		return zero, fmt.Errorf("read %s: %w", ref, bucket.ErrNotFound)
	}
	for n := 0; ; n++ {
		out, err := attempt()
		var lf listFailed
		switch {
		case err == nil:
			return out, nil
		case errors.As(err, &lf):
			return zero, lf.err
		case errors.Is(err, errNoSegments):
			return zero, fmt.Errorf("read %s: %w", ref, bucket.ErrNotFound)
		case !errors.Is(err, bucket.ErrNotFound):
			return zero, fmt.Errorf("read %s: %w", ref, err)
		case n >= s.cfg.MaxRelists:
			return zero, fmt.Errorf("read %s: %w (%d listings): %v", ref, ErrVanished, n+1, err)
		}
		if !sleepCtx(ctx, relistPause(n)) {
			return zero, fmt.Errorf("read %s: %w", ref, ctx.Err())
		}
	}
}

// listFailed carries the error of an attempt's listing out of relisting as it is.
type listFailed struct{ err error }

func (l listFailed) Error() string { return l.err.Error() }

// errNoSegments is an attempt's way of saying its listing found no segment.
var errNoSegments = errors.New("no segments listed")

// streamFirstPage is how many keys a cold read (readStreamed) lists before it
// starts fetching segments: the listing's first request asks for that many, and
// their GETs run while the whole session is listed.
const streamFirstPage = 32

// readStreamed is one attempt of ReadAll: it lists ref's segments and merges
// them, as listAndRead does, but does not wait for the whole listing before it
// fetches. The segments among the first streamFirstPage keys (one short
// request) are fetched while the session is listed again, whole; the rest once
// that listing is done. On an object store that lists a thousand keys per
// request and takes its time over each (MinIO reads every object's metadata to
// list it), a session of hundreds of segments then spends the listing's time
// fetching rather than waiting. A session of fewer keys is read from the
// first request, as listAndRead reads it.
//
// The second listing starts from the beginning, not after the first page: a
// key that sorts inside the first page can land after it was listed (a PUT in
// flight, a replica whose clock is behind), and an entry appended after it, its
// child, sorts later. A listing that went on after the first page would show
// the child without its parent; the second listing, sent after the first page
// was answered, shows what landed before it. The result merges both listings.
func (s *Store) readStreamed(ctx context.Context, ref TranscriptRef) (*MergeResult, error) {
	read := func(infos []SegmentInfo) (*MergeResult, error) { return s.readInfos(ctx, infos) }
	region := trace.StartRegion(ctx, "list segments")
	first, more, err := s.listSegmentsUpTo(ctx, ref, "", streamFirstPage, nil)
	if err != nil || !more {
		region.End()
		switch {
		case err != nil:
			return nil, listFailed{err}
		case len(first) == 0:
			return nil, errNoSegments
		}
		res, err := read(first)
		if err != nil {
			return nil, err
		}
		return healDangling(ctx, s, ref, first, res, read)
	}
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var ahead fetchedSegs
	done := make(chan struct{})
	go func() {
		defer close(done)
		ahead.segs, ahead.parsed, ahead.bad, ahead.err = s.fetchAllParsed(gctx, first, true, true)
	}()
	all, err := s.listSegmentsAfter(ctx, ref, "")
	region.End()
	if err != nil {
		cancel() // what was fetched is dropped
		<-done
		return nil, listFailed{err}
	}
	// The segments of the first page that the whole listing no longer shows
	// (a compaction deleted them meanwhile) are merged too: they were fetched.
	fetched := make(map[string]bool, len(first))
	for _, in := range first {
		fetched[in.Key] = true
	}
	rest := slices.DeleteFunc(slices.Clone(all), func(in SegmentInfo) bool { return fetched[in.Key] })
	var later fetchedSegs
	later.segs, later.parsed, later.bad, later.err = s.fetchAllParsed(ctx, rest, true, true)
	<-done
	if err := cmp.Or(ahead.err, later.err); err != nil {
		return nil, err
	}
	infos, segs, parsed := mergeFetched(first, ahead, rest, later)
	corrupt, err := s.sessionCorrupt(infos, segs, append(ahead.bad, later.bad...))
	if err != nil {
		return nil, err
	}
	res := s.mergeRead(ctx, infos, segs, parsed, corrupt)
	return healDangling(ctx, s, ref, infos, res, read)
}

// mergeFetched puts the segments fetched of two lists of a session, a and b,
// each in key order and with no key in both, into one in key order, with their
// fetched segments and parsed entries alongside.
func mergeFetched(a []SegmentInfo, fa fetchedSegs, b []SegmentInfo, fb fetchedSegs) ([]SegmentInfo, []*segment.Segment, [][]parsedEntry) {
	n := len(a) + len(b)
	infos, segs, parsed := make([]SegmentInfo, 0, n), make([]*segment.Segment, 0, n), make([][]parsedEntry, 0, n)
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		if j == len(b) || (i < len(a) && a[i].Key < b[j].Key) {
			infos, segs, parsed = append(infos, a[i]), append(segs, fa.segs[i]), append(parsed, fa.parsed[i])
			i++
			continue
		}
		infos, segs, parsed = append(infos, b[j]), append(segs, fb.segs[j]), append(parsed, fb.parsed[j])
		j++
	}
	return infos, segs, parsed
}

// readInfos fetches the listed segments infos of one session and merges them.
func (s *Store) readInfos(ctx context.Context, infos []SegmentInfo) (*MergeResult, error) {
	segs, parsed, corrupt, err := s.fetchSessionParsed(ctx, infos, true)
	if err != nil {
		return nil, err
	}
	return s.mergeRead(ctx, infos, segs, parsed, corrupt), nil
}

// mergeRead merges the fetched segments of a read (see mergeParsed) and
// records the corrupt ones it skipped.
func (s *Store) mergeRead(ctx context.Context, infos []SegmentInfo, segs []*segment.Segment, parsed [][]parsedEntry, corrupt []CorruptSegment) *MergeResult {
	var res *MergeResult
	trace.WithRegion(ctx, "merge entries", func() { res = mergeParsed(infos, segs, parsed) })
	res.Corrupt = corrupt
	return res
}

// relistPause is how long a read waits before listing again after its attempt-th
// listing (from 0) met a vanished segment: 20 ms, doubling with every attempt, plus
// up to as much again of jitter. A compaction deleting its inputs may still be at
// it: some S3 servers (SeaweedFS) carry out a batch delete key by key, over
// hundreds of milliseconds under load, and a listing sent at once would list the
// keys the batch has not reached yet.
func relistPause(attempt int) time.Duration {
	d := 20 * time.Millisecond << min(attempt, 8)
	return d + rand.N(d)
}
