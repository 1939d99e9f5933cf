package transcript

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/trace"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/segment"
)

// fetchSession fetches and decodes a session's segments (infos in key order).
//
// The reader rule for superseded segments: a compacted segment's list of inputs hides
// nothing that exists. Every listed segment is fetched and merged (an input and the
// segment that holds it give the same entries, which collapse), because a segment
// can claim inputs it does not hold and only reading both shows it. The claim counts
// for one thing only: a claimed input that fails verification is skipped without an
// error, since a compacted segment that exists says it holds those entries (Compact
// deletes the input only after checking that, and verify names an input that its
// superseder lacks). So a forged claim costs readers nothing while the claimed
// segments exist, and an honest one costs their GETs until the delete delay ends.
// A nil element of the result is a segment skipped as corrupt.
func (s *Store) fetchSession(ctx context.Context, infos []SegmentInfo) ([]*segment.Segment, []CorruptSegment, error) {
	segs, _, corrupt, err := s.fetchSessionParsed(ctx, infos, false)
	return segs, corrupt, err
}

// fetchSessionParsed is fetchSession that, when parse is set, also parses the
// entries of every segment without an entry index while its fetch waits on other
// GETs (see fetchAllParsed).
func (s *Store) fetchSessionParsed(ctx context.Context, infos []SegmentInfo, parse bool) ([]*segment.Segment, [][]parsedEntry, []CorruptSegment, error) {
	segs, parsed, bad, err := s.fetchAllParsed(ctx, infos, true, parse)
	if err != nil {
		return nil, nil, nil, err
	}
	corrupt, err := s.sessionCorrupt(infos, segs, bad)
	if err != nil {
		return nil, nil, nil, err
	}
	return segs, parsed, corrupt, nil
}

// sessionCorrupt applies the reader rule of fetchSession to the segments of a
// session that failed verification (bad, of infos, fetched as segs): a claimed
// input is left to the segment claiming it; any other fails the read, or is
// returned when the store skips corrupt segments.
func (s *Store) sessionCorrupt(infos []SegmentInfo, segs []*segment.Segment, bad []CorruptSegment) ([]CorruptSegment, error) {
	if len(bad) == 0 {
		return nil, nil
	}
	sup := superseders(infos, segs)
	at := make(map[string]int, len(infos))
	for i, in := range infos {
		at[in.Key] = i
	}
	var corrupt []CorruptSegment
	for _, c := range bad {
		if _, claimed := supersededIn(sup, infos[at[c.Key]]); claimed {
			continue // left to the segment that claims it (see above)
		}
		if !s.cfg.SkipCorrupt {
			return nil, c.Err
		}
		corrupt = append(corrupt, c)
	}
	return corrupt, nil
}

// fetchAll fetches and decodes the segments in parallel, bounded by readLimit, or
// by the shared GET slots of s.gets when set. A nil element of the result is a
// segment skipped as corrupt (only when skipCorrupt is set).
func (s *Store) fetchAll(ctx context.Context, infos []SegmentInfo, skipCorrupt bool) ([]*segment.Segment, []CorruptSegment, error) {
	segs, _, corrupt, err := s.fetchAllParsed(ctx, infos, skipCorrupt, false)
	return segs, corrupt, err
}

// fetchAllParsed is fetchAll that, when parse is set, also parses each entry of a
// segment without an entry index (a level-0 segment) right after its decode, in
// the goroutine that fetched it: parsed[i][pos] is what parseStoredEntry reads of
// that entry, not ok when it does not parse (the merge parses it again to report
// why). Parsing there overlaps the other segments' GETs instead of
// running after the last one, inside the merge. parsed[i] is nil for a segment with
// an entry index.
func (s *Store) fetchAllParsed(ctx context.Context, infos []SegmentInfo, skipCorrupt, parse bool) ([]*segment.Segment, [][]parsedEntry, []CorruptSegment, error) {
	segs := make([]*segment.Segment, len(infos))
	var parsed [][]parsedEntry
	if parse {
		parsed = make([][]parsedEntry, len(infos))
	}
	errs := make([]error, len(infos))
	g, gctx := errgroup.WithContext(ctx)
	if s.gets == nil {
		g.SetLimit(s.readLimit(len(infos)))
	}
	var ref TranscriptRef
	var prefix string
	for i, info := range infos {
		if i == 0 || info.Ref != ref {
			ref, prefix = info.Ref, sessionPrefix(s.cfg.Prefix, info.Ref)
		}
		// A key listed under its own session, which the caller scoped, is read
		// without a second ParseKey.
		listed := strings.HasPrefix(info.Key, prefix)
		g.Go(func() error {
			var seg *segment.Segment
			var ahead []parsedEntry
			if listed {
				seg, ahead = s.cfg.SegmentCache.get(info.Key)
			}
			var err error
			if seg == nil {
				seg, err = s.fetchOne(gctx, info.Key, listed)
			}
			if err == nil && KeyChecksum(seg.Meta) != info.Hash {
				err = fmt.Errorf("read segment %s: %w: key names checksum %016x, segment has %016x",
					info.Key, segment.ErrChecksum, info.Hash, KeyChecksum(seg.Meta))
			}
			if err != nil && skipCorrupt && errors.Is(err, segment.ErrCorrupt) {
				errs[i] = err
				return nil
			}
			segs[i] = seg
			if err != nil {
				return err
			}
			if parse && !seg.Meta.HasIndex() {
				if ahead == nil {
					trace.WithRegion(gctx, "parse entries", func() { ahead = parseEntries(seg.Entries) })
				}
				parsed[i] = ahead
			}
			if listed {
				s.cfg.SegmentCache.put(info.Key, seg, ahead)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, nil, err
	}
	var corrupt []CorruptSegment
	for i, err := range errs {
		if err != nil {
			corrupt = append(corrupt, CorruptSegment{Key: infos[i].Key, Err: err})
		}
	}
	return segs, parsed, corrupt, nil
}

// fetchOne GETs and decodes one segment of fetchAllParsed, within a GET slot of
// s.gets when set: listed is whether a listing of this store gave the key (else
// it is parsed and scoped first).
func (s *Store) fetchOne(ctx context.Context, key string, listed bool) (*segment.Segment, error) {
	if s.gets != nil {
		select {
		case s.gets <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		defer func() { <-s.gets }() // the slot bounds requests in flight, not the parsing after them
	}
	defer trace.StartRegion(ctx, "get segment").End()
	if listed {
		return s.readListedSegment(ctx, key)
	}
	seg, _, err := s.readSegmentAsStored(ctx, key) // a key handed in: parsed and scoped
	return seg, err
}

// parsedEntry is what parseStoredEntry reads of an entry: ok is false when it
// does not parse.
type parsedEntry struct {
	id, parent, typ string
	time            time.Time
	ok              bool
}

// parseChunkBytes is the least JSONL parseEntries gives one goroutine: below
// twice that, a segment is parsed by the goroutine that fetched it.
const parseChunkBytes = 1 << 20

// parseEntries parses each raw entry with parseStoredEntry. A large segment (a
// replica's first flush of a session it adopted, a long stretch flushed at
// once: megabytes of JSONL) is cut into runs of entries of at least
// parseChunkBytes, parsed on up to GOMAXPROCS goroutines, rather than leaving
// one core to scan it all after the download while the others idle.
func parseEntries(raws [][]byte) []parsedEntry {
	return parseEntriesChunked(raws, parseChunkBytes)
}

// parseEntriesChunked is parseEntries with the chunk size given (for tests).
func parseEntriesChunked(raws [][]byte, chunkBytes int) []parsedEntry {
	out := make([]parsedEntry, len(raws))
	parse := func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if e, err := parseStoredEntry(raws[i]); err == nil {
				out[i] = parsedEntry{id: e.ID, parent: e.ParentID, typ: e.Type, time: e.Time, ok: true}
			}
		}
	}
	total := 0
	for _, raw := range raws {
		total += len(raw)
	}
	chunks := min(runtime.GOMAXPROCS(0), total/chunkBytes)
	if chunks < 2 {
		parse(0, len(raws))
		return out
	}
	// chunks-1 contiguous runs of about total/chunks bytes each go to new
	// goroutines; the rest is parsed here.
	var wg sync.WaitGroup
	per, lo, acc, spawned := total/chunks, 0, 0, 0
	for i, raw := range raws {
		if spawned == chunks-1 {
			break
		}
		acc += len(raw)
		if acc >= per {
			from := lo
			wg.Go(func() { parse(from, i+1) })
			lo, acc, spawned = i+1, 0, spawned+1
		}
	}
	parse(lo, len(raws))
	wg.Wait()
	return out
}
