package transcript

import (
	"context"
	"errors"
	"fmt"
	"runtime/trace"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// ReadAllKnown is ReadAll for a reader that knows the session's segments from an
// earlier read (known: typically that read's MergeResult.Segments). It starts
// the GETs of the known segments at once and lists the session meanwhile, so a
// session that did not change since (a compacted one, above all) costs one round
// trip instead of a LIST and then the GETs. The listing decides: a known segment
// it does not show is dropped, fetched or not, and one it shows that was not
// known is fetched once it is in; the result is what ReadAll gives of the same
// listing. When a fetch fails (a known segment gone, a listed one vanished, the
// bucket failing) the read starts over as ReadAll, which lists again and
// reports what it meets. A known segment of another session gives an error
// wrapping ErrInvalidRef; none known is ReadAll.
func (s *Store) ReadAllKnown(ctx context.Context, ref TranscriptRef, known []SegmentInfo) (*MergeResult, error) {
	ctx, task := trace.NewTask(ctx, "transcript.ReadAllKnown")
	defer task.End()
	ref, visible, err := s.checkRef(ref)
	if err != nil {
		return nil, err
	}
	prefix := sessionPrefix(s.cfg.Prefix, ref)
	for _, in := range known {
		if in.Ref.Norm() != ref || len(in.Key) <= len(prefix) || in.Key[:len(prefix)] != prefix {
			return nil, fmt.Errorf("read %s: %w: known segment %s is not of the session", ref, ErrInvalidRef, in.Key)
		}
	}
	if !visible || len(known) == 0 {
		return s.ReadAll(ctx, ref)
	}
	res, err := readResolved(ctx, s, ref, func() (*MergeResult, error) { return s.readKnown(ctx, ref, known) })
	if errors.Is(err, errGuessMissed) {
		return s.ReadAll(ctx, ref)
	}
	return res, err
}

// errGuessMissed is readKnown's way of saying that a fetch failed, and the read
// starts over as ReadAll.
var errGuessMissed = errors.New("known segments not read")

// fetchedSegs is what fetchAllParsed returns.
type fetchedSegs struct {
	segs   []*segment.Segment
	parsed [][]parsedEntry
	bad    []CorruptSegment
	err    error
}

// readKnown fetches known while it lists ref, then fetches what the listing adds
// and merges what it shows (entries as stored).
func (s *Store) readKnown(ctx context.Context, ref TranscriptRef, known []SegmentInfo) (*MergeResult, error) {
	if s.keep != nil {
		kept := make([]SegmentInfo, 0, len(known))
		for _, in := range known {
			if !s.hidden(in) {
				kept = append(kept, in)
			}
		}
		known = kept
	}
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var ahead fetchedSegs
	done := make(chan struct{})
	go func() {
		defer close(done)
		ahead.segs, ahead.parsed, ahead.bad, ahead.err = s.fetchAllParsed(gctx, known, true, true)
	}()
	region := trace.StartRegion(ctx, "list segments")
	infos, err := s.ListSegments(ctx, ref)
	region.End()
	if err == nil && len(infos) == 0 {
		err = fmt.Errorf("read %s: %w", ref, bucket.ErrNotFound)
	}
	if err != nil {
		cancel()
		<-done
		return nil, err
	}
	at := make(map[string]int, len(known))
	for i, in := range known {
		at[in.Key] = i
	}
	var extra []SegmentInfo
	for _, in := range infos {
		if _, ok := at[in.Key]; !ok {
			extra = append(extra, in)
		}
	}
	var more fetchedSegs
	if len(extra) > 0 {
		more.segs, more.parsed, more.bad, more.err = s.fetchAllParsed(ctx, extra, true, true)
	}
	<-done
	if ahead.err != nil || more.err != nil {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read %s: %w", ref, err)
		}
		return nil, errGuessMissed
	}
	segs, parsed, bad := ahead.pick(infos, at, more)
	corrupt, err := s.sessionCorrupt(infos, segs, bad)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", ref, err)
	}
	res := s.mergeRead(ctx, infos, segs, parsed, corrupt)
	res, err = healDangling(ctx, s, ref, infos, res, func(infos []SegmentInfo) (*MergeResult, error) { return s.readInfos(ctx, infos) })
	if err != nil {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("read %s: %w", ref, err)
		}
		return nil, errGuessMissed // ReadAll lists again and says what it meets
	}
	return res, nil
}

// pick lays out, in the order of the listing infos, the segments fetched ahead
// (f, indexed by key in at) and those fetched after the listing (more, of the
// listed segments not in at, in listing order); a known segment the listing does
// not show is left out.
func (f fetchedSegs) pick(infos []SegmentInfo, at map[string]int, more fetchedSegs) ([]*segment.Segment, [][]parsedEntry, []CorruptSegment) {
	segs := make([]*segment.Segment, len(infos))
	parsed := make([][]parsedEntry, len(infos))
	badKey := map[string]CorruptSegment{}
	for _, b := range append(f.bad, more.bad...) {
		badKey[b.Key] = b
	}
	var bad []CorruptSegment
	j := 0
	for i, in := range infos {
		if b, ok := badKey[in.Key]; ok {
			bad = append(bad, b)
		}
		if k, ok := at[in.Key]; ok {
			segs[i], parsed[i] = f.segs[k], f.parsed[k]
			continue
		}
		segs[i], parsed[i] = more.segs[j], more.parsed[j]
		j++
	}
	return segs, parsed, bad
}
