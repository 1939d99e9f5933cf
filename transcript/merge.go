package transcript

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/trace"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// Conflict reports two different entries that carry the same id. The version with
// the earliest origin is kept, on every replica and under every compaction.
type Conflict struct {
	ID string
	// Kept and Dropped locate the two versions as read: segment key and position.
	KeptSegment    string
	KeptPos        int
	DroppedSegment string
	DroppedPos     int
	// KeptOrigin and DroppedOrigin are the two versions' origins.
	KeptOrigin, DroppedOrigin Origin
}

// CorruptSegment reports a segment that ReadAll skipped (Config.SkipCorrupt).
type CorruptSegment struct {
	Key string
	Err error
}

// MergeResult is the union of a session's segments.
type MergeResult struct {
	// Entries holds every distinct entry id once (the conflict winner), parents
	// before children, then by origin (see Origin.Compare).
	Entries []Entry
	// Losers holds the versions that lost a conflict, by origin: kept so that
	// compaction loses no bytes that were ever written.
	Losers []Entry
	// Segments lists the segments that were read, in key order (superseded inputs of
	// a compacted segment are left out).
	Segments []SegmentInfo
	// Conflicts lists ids seen with different bytes: one per losing version, by
	// the loser's origin.
	Conflicts []Conflict
	// Invalid lists entries that were skipped because they have no usable id.
	Invalid []error
	// Corrupt lists segments skipped for failing verification (Config.SkipCorrupt).
	Corrupt []CorruptSegment
	// Cycles counts parent links that were ignored because they formed a cycle.
	Cycles int
}

// Raw returns the raw bytes of the merged entries in order.
func (r *MergeResult) Raw() [][]byte {
	out := make([][]byte, len(r.Entries))
	for i, e := range r.Entries {
		out[i] = e.Raw
	}
	return out
}

// Dangling returns the entries whose parentId names no entry of the result. A reader
// that sees one met a child whose parent's segment it could not see: a writer
// uploaded out of order, or a segment is missing.
func (r *MergeResult) Dangling() []Entry {
	ids := make(map[string]bool, len(r.Entries))
	for _, e := range r.Entries {
		ids[e.ID] = true
	}
	var out []Entry
	for _, e := range r.Entries {
		if e.ParentID != "" && !ids[e.ParentID] {
			out = append(out, e)
		}
	}
	return out
}

// Missing returns the ids of want that the result lacks, in the order given.
func (r *MergeResult) Missing(want []string) []string {
	ids := make(map[string]bool, len(r.Entries))
	for _, e := range r.Entries {
		ids[e.ID] = true
	}
	var out []string
	for _, id := range want {
		if !ids[id] {
			out = append(out, id)
		}
	}
	return out
}

// ReadAll reads every segment of ref and union-merges their entries (see MergeResult).
// A session without segments gives an error wrapping bucket.ErrNotFound. If a listed segment
// vanishes before it is fetched (a compaction replaced it), ReadAll lists again after
// a pause (relistPause), at most Config.MaxRelists times, then it fails with
// ErrVanished (which a reader must not take for a missing session).
func (s *Store) ReadAll(ctx context.Context, ref TranscriptRef) (*MergeResult, error) {
	ctx, task := trace.NewTask(ctx, "transcript.ReadAll")
	defer task.End()
	return readListed(ctx, s, ref, func(infos []SegmentInfo) (*MergeResult, error) {
		segs, parsed, corrupt, err := s.fetchSessionParsed(ctx, infos, true)
		if err != nil {
			return nil, err
		}
		var res *MergeResult
		trace.WithRegion(ctx, "merge entries", func() { res = mergeParsed(infos, segs, parsed) })
		res.Corrupt = corrupt
		return res, nil
	})
}

// ErrVanished is wrapped when a read kept meeting listed segments that were gone
// by the time it fetched them (a compaction deleting them), Config.MaxRelists+1
// times in a row. It does not wrap bucket.ErrNotFound: the session exists.
var ErrVanished = errors.New("segments keep vanishing while read")

// readListed lists ref's segments and calls read with them. A session without
// segments gives an error wrapping bucket.ErrNotFound; when read meets a listed segment
// that is gone (bucket.ErrNotFound), it lists again, at most Config.MaxRelists times,
// then fails with ErrVanished.
func readListed[T any](ctx context.Context, s *Store, ref TranscriptRef, read func([]SegmentInfo) (T, error)) (T, error) {
	return readListedAfter(ctx, s, ref, "", read)
}

// readListedAfter is readListed over the segments whose keys sort after the
// relative key after ("" for all of them). An incremental listing (after set)
// that finds nothing is not a missing session: read is called with no segments.
func readListedAfter[T any](ctx context.Context, s *Store, ref TranscriptRef, after string, read func([]SegmentInfo) (T, error)) (T, error) {
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
			return nil, nil, nil, c.Err
		}
		corrupt = append(corrupt, c)
	}
	return segs, parsed, corrupt, nil
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
			if s.gets != nil {
				select {
				case s.gets <- struct{}{}:
				case <-gctx.Done():
					return gctx.Err()
				}
			}
			var seg *segment.Segment
			var err error
			region := trace.StartRegion(gctx, "get segment")
			if listed {
				seg, err = s.readListedSegment(gctx, info.Key)
			} else {
				seg, err = s.ReadSegment(gctx, info.Key) // a key handed in: parsed and scoped
			}
			region.End()
			if s.gets != nil {
				<-s.gets // the slot bounds requests in flight, not the parsing after them
			}
			if err == nil && seg.Meta.Checksum != info.Hash {
				err = fmt.Errorf("read segment %s: %w: key names checksum %016x, segment has %016x",
					info.Key, segment.ErrChecksum, info.Hash, seg.Meta.Checksum)
			}
			if err != nil && skipCorrupt && errors.Is(err, segment.ErrCorrupt) {
				errs[i] = err
				return nil
			}
			segs[i] = seg
			if err == nil && parse && seg.Meta.Index == nil {
				trace.WithRegion(gctx, "parse entries", func() { parsed[i] = parseEntries(seg.Entries) })
			}
			return err
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

// parsedEntry is what parseStoredEntry reads of an entry: ok is false when it
// does not parse.
type parsedEntry struct {
	id, parent string
	time       time.Time
	ok         bool
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
				out[i] = parsedEntry{id: e.ID, parent: e.ParentID, time: e.Time, ok: true}
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

// superseders maps the session-relative key (sessionRelKey) of every segment that a
// decoded segment names as an input to the segment naming it; of several, the
// highest level wins, then the first in key order. Only compacted segments (level
// above 0) count: a level-0 segment naming inputs is not what Compact writes; and
// of a compaction written as a group of parts, only a whole group (see groupsOf).
func superseders(infos []SegmentInfo, segs []*segment.Segment) map[string]SegmentInfo {
	sup := map[string]SegmentInfo{}
	whole := wholeParts(infos, segs)
	for i, seg := range segs {
		if seg == nil || infos[i].Level == 0 || !whole[i] {
			continue
		}
		for _, in := range seg.Meta.Inputs {
			k := sessionRelKey(in)
			if cur, ok := sup[k]; !ok || infos[i].Level > cur.Level {
				sup[k] = infos[i]
			}
		}
	}
	return sup
}

// supersededIn returns the segment that supersedes info according to sup, if any.
// Only a segment of a higher level supersedes, so compacted segments naming each
// other hide nothing.
func supersededIn(sup map[string]SegmentInfo, info SegmentInfo) (SegmentInfo, bool) {
	by, ok := sup[sessionRelKey(info.Key)]
	return by, ok && by.Level > info.Level
}

// merge computes the union of decoded segments listed in key order: every entry
// id once, the version with the earliest origin winning, ordered parents first,
// then by origin. The result depends on the set of (entry, origin) pairs only,
// not on which segments hold them or on the listing order.
func merge(infos []SegmentInfo, segs []*segment.Segment) *MergeResult {
	return mergeParsed(infos, segs, nil)
}

// mergeParsed is merge with entries parsed ahead (fetchAllParsed): parsed[i],
// when not nil, holds what parseStoredEntry reads of segment i's entries. The
// records are a third of an Entry's size and each segment's are dropped once
// merged: a session of a million level-0 entries holds about 56 MB of them at the
// start of the merge.
func mergeParsed(infos []SegmentInfo, segs []*segment.Segment, parsed [][]parsedEntry) *MergeResult {
	total := 0
	for _, seg := range segs {
		if seg != nil {
			total += len(seg.Entries)
		}
	}
	// Sized for the common case of distinct ids, so neither grows while merging.
	res := &MergeResult{Entries: make([]Entry, 0, total)}
	sup := superseders(infos, segs)
	byID := make(map[string]int, total) // id -> index in res.Entries of the current winner
	var others map[string][]Entry       // id -> further versions (other bytes), rare
	for i, seg := range segs {
		if seg == nil {
			continue
		}
		// Entries of superseded inputs that were read are merged too (see
		// fetchSession): identical bytes collapse to their earliest origin, so the
		// result does not depend on whether an input is still there. Segments lists
		// only the segments nothing supersedes.
		if _, ok := supersededIn(sup, infos[i]); !ok {
			res.Segments = append(res.Segments, infos[i])
		}
		origin := originsOf(infos[i], seg)
		index := seg.Meta.Index
		var ahead []parsedEntry
		if parsed != nil {
			ahead, parsed[i] = parsed[i], nil // freed once merged
		}
		for pos, raw := range seg.Entries {
			var e Entry
			switch {
			case index != nil && index[pos].ID != "":
				// The compactor parsed the entry when it wrote the index.
				e = Entry{ID: index[pos].ID, ParentID: index[pos].ParentID, Raw: raw}
			case ahead != nil && ahead[pos].ok:
				p := ahead[pos] // parsed when fetched
				e = Entry{ID: p.id, ParentID: p.parent, Time: p.time, Raw: raw}
			default:
				var err error
				if e, err = parseStoredEntry(raw); err != nil {
					res.Invalid = append(res.Invalid, fmt.Errorf("segment %s entry %d: %w", infos[i].Key, pos, err))
					continue
				}
			}
			e.Segment, e.Pos, e.Origin = infos[i].Key, pos, origin(pos)
			j, ok := byID[e.ID]
			if !ok {
				byID[e.ID] = len(res.Entries)
				res.Entries = append(res.Entries, e)
				continue
			}
			if kept := &res.Entries[j]; bytes.Equal(kept.Raw, e.Raw) {
				if e.Origin.Compare(kept.Origin) < 0 {
					kept.Origin = e.Origin
				}
				continue
			}
			if others == nil {
				others = map[string][]Entry{}
			}
			vs := others[e.ID]
			k := slices.IndexFunc(vs, func(v Entry) bool { return bytes.Equal(v.Raw, e.Raw) })
			switch {
			case k < 0:
				others[e.ID] = append(vs, e)
			case e.Origin.Compare(vs[k].Origin) < 0:
				vs[k].Origin = e.Origin
			}
		}
	}
	for id, vs := range others {
		j := byID[id]
		for k, v := range vs {
			if v.Origin.Compare(res.Entries[j].Origin) < 0 {
				res.Entries[j], vs[k] = v, res.Entries[j]
			}
		}
		for _, v := range vs {
			w := res.Entries[j]
			res.Losers = append(res.Losers, v)
			res.Conflicts = append(res.Conflicts, Conflict{ID: id, KeptSegment: w.Segment, KeptPos: w.Pos,
				DroppedSegment: v.Segment, DroppedPos: v.Pos, KeptOrigin: w.Origin, DroppedOrigin: v.Origin})
		}
	}
	slices.SortFunc(res.Losers, func(a, b Entry) int { return a.Origin.Compare(b.Origin) })
	slices.SortFunc(res.Conflicts, func(a, b Conflict) int { return a.DroppedOrigin.Compare(b.DroppedOrigin) })
	sorted, moved := sortByOrigin(res.Entries)
	if moved {
		byID = nil // topoOrder indexes the new order
	}
	res.Entries, res.Cycles = topoOrder(sorted, byID)
	return res
}
