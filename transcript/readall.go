package transcript

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/trace"
	"time"

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
	res, err := readListed(ctx, s, ref, func(infos []SegmentInfo) (*MergeResult, error) {
		segs, parsed, corrupt, err := s.fetchSessionParsed(ctx, infos, true)
		if err != nil {
			return nil, err
		}
		var res *MergeResult
		trace.WithRegion(ctx, "merge entries", func() { res = mergeParsed(infos, segs, parsed) })
		res.Corrupt = corrupt
		return res, nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
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
	var zero T
	ref, visible, err := s.checkRef(ref)
	if err != nil {
		return zero, err
	}
	if !visible {
		return zero, fmt.Errorf("read %s: %w", ref, bucket.ErrNotFound)
	}
	for attempt := 0; ; attempt++ {
		var infos []SegmentInfo
		region := trace.StartRegion(ctx, "list segments")
		if after == "" {
			infos, err = s.ListSegments(ctx, ref)
		} else {
			infos, err = s.listSegmentsAfter(ctx, ref, sessionPrefix(s.cfg.Prefix, ref)+after)
		}
		region.End()
		if err != nil {
			return zero, err
		}
		if len(infos) == 0 && after == "" {
			return zero, fmt.Errorf("read %s: %w", ref, bucket.ErrNotFound)
		}
		out, err := read(infos)
		switch {
		case err == nil:
			return out, nil
		case !errors.Is(err, bucket.ErrNotFound):
			return zero, fmt.Errorf("read %s: %w", ref, err)
		case attempt >= s.cfg.MaxRelists:
			return zero, fmt.Errorf("read %s: %w (%d listings): %v", ref, ErrVanished, attempt+1, err)
		}
		if !sleepCtx(ctx, relistPause(attempt)) {
			return zero, fmt.Errorf("read %s: %w", ref, ctx.Err())
		}
	}
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
