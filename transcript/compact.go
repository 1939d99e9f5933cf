package transcript

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// DefaultMinSegments is how many segments a level must hold before Compact merges them.
const DefaultMinSegments = 4

// DefaultDeleteDelay is how long a superseded segment stays readable after it was
// marked for deletion.
const DefaultDeleteDelay = 10 * time.Minute

// DeleteAtOnce, as CompactOptions.DeleteDelay, deletes superseded segments in the run
// that marks them. A reader that listed them a moment before may then have to list
// again (see Config.MaxRelists); use it for tests and buckets nobody reads.
const DeleteAtOnce time.Duration = -1

// SkipSessionDeleted, as CompactResult.Skipped, says that every input of a
// compaction was deleted while it merged them, so its output was deleted too and
// the session left as it is: the session was deleted (a retention run,
// Store.Delete), or another compaction, whose output holds them, deleted them.
const SkipSessionDeleted = "its segments were deleted while it merged them: its output was deleted"

// outputSettle is how old, on the bucket's clock, another run's output must be
// (every part of its group) before Compact deletes the inputs it supersedes on
// its account. The run that stored an output deletes it again when it finds
// every input gone (see dropIfInputsGone): it cannot tell a deletion of the
// session from another compaction's, and the other compaction may be one that
// resumed from its own output, found in a listing before its inputs were
// marked. So a run that did not write an output leaves its inputs (marked,
// Pending) until the output's newest part is outputSettle old, and the writer
// drops its output only if it found the inputs gone within outputSettle of
// starting the PUT of that part: the two never both happen (the clocks of the
// bucket and of the job may differ, but they run at one rate). With a
// DeleteDelay of a minute or more the marks already wait longer.
const outputSettle = time.Minute

// ErrCompactInput is wrapped by Compact errors about an input it cannot compact
// without losing something: a segment that fails verification, or an entry without
// a usable id. The session is left as it was.
var ErrCompactInput = errors.New("cannot compact input")

// CompactOptions tune Compact. The zero value is usable.
type CompactOptions struct {
	// MinSegments is how many unsuperseded segments a level needs before they are
	// merged into one segment of the next level (default DefaultMinSegments; at
	// least 2).
	MinSegments int
	// DeleteDelay is how long a marked input stays before Compact deletes it, so a
	// reader that listed it a moment ago can still fetch it. Zero means
	// DefaultDeleteDelay; DeleteAtOnce (any negative value) deletes in the same run.
	// Whatever the delay, the inputs of an output this run did not store wait
	// until that output is a minute old on the bucket's clock (its writer may
	// drop it until then: see SkipSessionDeleted).
	DeleteDelay time.Duration
	// DryRun plans without writing or deleting anything.
	DryRun bool
	// OlderThan, when positive, leaves a session alone if any of its segments was
	// stored less than OlderThan ago (a session being written right now;
	// CompactResult.SkippedRecent). The age is measured on the bucket's clock
	// (bucket.Clock) from the object's ModTime as the bucket lists it, never from the
	// time in the key or the job's clock.
	OlderThan time.Duration
	// Writer names the compacted segments (default: NewRandomWriter).
	Writer *Writer
	// UncommittedAge is how old (by the bucket's clock, from the object's
	// ModTime) a segment of a strict session that its head does not commit must
	// be before Compact deletes it (default DefaultDeleteDelay). It must exceed
	// the longest time from an append's segment write to its head write.
	UncommittedAge time.Duration
	// Full merges all of a session's unsuperseded segments, whatever their levels,
	// into one (a major compaction), once it has at least two units, instead of
	// merging level by level: a session nobody writes any more is then read with
	// one GET (one per part of a group), where the level-by-level merge leaves up
	// to MinSegments-1 segments on each level. It rewrites the whole session, so
	// run it on sessions that are done (with OlderThan), not on every run.
	Full bool
	// TargetSegmentSize bounds the JSONL of each segment Compact writes (default
	// segment.DefaultTargetSegmentSize, at most segment.DefaultMaxSegmentSize): a
	// merged output above it is written as a group of parts of one level (an
	// entry larger than it makes a part of its own).
	TargetSegmentSize int64
	// Hidden, when not nil, is called by CompactAll with each session listed
	// whose prefix holds objects named like one of its folders, and their keys
	// (see ErrHiddenSegments). Compact ignores it.
	Hidden func(ref TranscriptRef, keys []string)
}

// Compact merges the segments of ref level by level: a level with at least
// MinSegments units that no other segment supersedes (a unit is a segment, or all
// the parts of one output group) becomes the next level, holding their union
// (deduplicated, in merge order, conflicting versions of an id kept after the
// chosen one) and naming them as its inputs: one segment, or a group of parts of
// at most TargetSegmentSize each, every part naming all the inputs. Only after the
// whole output is stored are the inputs marked for deletion; an input is deleted
// once its mark object is DeleteDelay old on the bucket's clock and the output that
// supersedes it exists now, whole (every part of its group listed and verified),
// and holds every one of its entries, byte for byte (checked before the delete,
// whoever wrote the mark or the superseding segments).
//
// A group that is not whole (a run that stopped between two part PUTs) supersedes
// nothing: the next run compacts its inputs again into a new group, and the parts
// left over are ordinary segments of their level, merged at the next level.
//
// Compact never touches a segment it did not read: a segment written while it runs is
// neither an input nor marked. It is idempotent and resumable: run again after a crash
// it marks the inputs of outputs already written instead of merging them again
// (and deletes them only once those outputs are a minute old on the bucket's
// clock: the run that wrote one may still be running, see outputSettle). Two
// runs on one session at once may both write an output; readers collapse the
// duplicates; if another job keeps deleting what a run listed, the run stops and
// reports CompactResult.Contended. A segment that fails verification stops the
// session with an error wrapping ErrCompactInput and changes nothing.
func (s *Store) Compact(ctx context.Context, ref TranscriptRef, opts CompactOptions) (CompactResult, error) {
	return s.compact(ctx, ref, opts, nil)
}

// compact is Compact, with the session's listing in hand when ls is not nil (its
// first attempt then sends no LIST; a retry lists again).
func (s *Store) compact(ctx context.Context, ref TranscriptRef, opts CompactOptions, ls *sessionListing) (CompactResult, error) {
	ref, visible, err := s.checkRef(ref)
	if err != nil {
		return CompactResult{}, err
	}
	if !visible {
		return CompactResult{}, fmt.Errorf("compact %s: %w", ref, bucket.ErrNotFound)
	}
	if opts.MinSegments < 2 {
		opts.MinSegments = DefaultMinSegments
	}
	switch {
	case opts.DeleteDelay == 0:
		opts.DeleteDelay = DefaultDeleteDelay
	case opts.DeleteDelay < 0:
		opts.DeleteDelay = 0
	}
	if opts.Writer == nil {
		opts.Writer = NewRandomWriter()
	}
	if opts.UncommittedAge <= 0 {
		opts.UncommittedAge = DefaultDeleteDelay
	}
	switch {
	case opts.TargetSegmentSize <= 0:
		opts.TargetSegmentSize = segment.DefaultTargetSegmentSize
	case opts.TargetSegmentSize > segment.DefaultMaxSegmentSize:
		opts.TargetSegmentSize = segment.DefaultMaxSegmentSize
	}
	for attempt := 0; ; attempt++ {
		res, err := s.compactOnce(ctx, ref, opts, ls)
		ls = nil
		if errors.Is(err, bucket.ErrNotFound) {
			// A listed segment or mark vanished: another job is compacting the
			// session. Look again a little later; if it keeps changing, leave it to
			// that job. Nothing this run did can lose data (it only writes outputs
			// holding what it read, and marks inputs those outputs hold).
			if attempt < s.cfg.MaxRelists {
				if !sleepCtx(ctx, time.Duration(attempt+1)*20*time.Millisecond) {
					return res, fmt.Errorf("compact %s: %w", ref, ctx.Err())
				}
				continue
			}
			res.Contended = true
			return res, nil
		}
		if err != nil {
			return res, fmt.Errorf("compact %s: %w", ref, err)
		}
		if opts.DryRun {
			res.countPlanned(opts.DeleteDelay)
		}
		return res, nil
	}
}

// sleepCtx waits d or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// compactState is one session's listing with what Compact learned about it.
type compactState struct {
	ref   TranscriptRef
	infos []SegmentInfo
	segs  map[string]*segment.Segment // decoded segments by key
	// contents holds the raw entries of output groups, by group id, once
	// checkContained needed them.
	contents map[string]*entrySet
	// groupOf maps the key of every compacted segment to its output group.
	groupOf map[string]*segGroup
	// sup holds the segments that supersede others (see superseders).
	sup     map[string]SegmentInfo
	present map[string]SegmentInfo
	// settle says that the outputs of other runs must settle before their
	// inputs go (outputSettle): not in a strict session, whose outputs are
	// committed by its head and never dropped once committed.
	settle bool
	// stored holds each listed segment's ModTime, by key.
	stored map[string]time.Time
	// lastPut is when this run started the PUT of the last segment it stored
	// (the job's clock): dropIfInputsGone counts from it.
	lastPut time.Time
}

// unsettled reports whether out, an output this run did not write, or a part
// of its group, was stored less than outputSettle before now on the bucket's
// clock, so that its writer may still drop it (dropIfInputsGone).
func (st *compactState) unsettled(out string, now time.Time) bool {
	if !st.settle {
		return false
	}
	young := func(key string) bool {
		at, ok := st.stored[key]
		return !ok || now.Sub(at) < outputSettle
	}
	g := st.groupOf[out]
	if g == nil {
		return young(out)
	}
	for _, p := range g.parts {
		if young(p.Key) {
			return true
		}
	}
	return false
}

// waitsForOutput reports whether input k of mark m must stay until the output
// that supersedes it settles: an output this run did not store (m is another
// run's, or k is superseded by another output than m's) and is unsettled.
func (st *compactState) waitsForOutput(m deletionMark, k string, now time.Time) bool {
	out, _ := st.supersededBy(k)
	return !(m.own && out == m.SupersededBy) && st.unsettled(out, now)
}

// supersededBy returns the key of the segment that supersedes the segment at key,
// if that one is listed.
func (st *compactState) supersededBy(key string) (string, bool) {
	in, ok := st.present[key]
	if !ok {
		return "", false
	}
	by, ok := supersededIn(st.sup, in)
	return by.Key, ok
}

// wholeNow reports whether the output group of the compacted segment out is whole
// and every part of it is still present (none deleted by this run).
func (st *compactState) wholeNow(out string) bool {
	g := st.groupOf[out]
	if g == nil || !g.whole() {
		return false
	}
	for _, p := range g.parts {
		if _, ok := st.present[p.Key]; !ok {
			return false
		}
	}
	return true
}

// incomplete describes the group of out when it is not whole now.
func (st *compactState) incomplete(out string) *IncompleteGroup {
	ig := &IncompleteGroup{Group: out}
	g := st.groupOf[out]
	if g == nil {
		return ig
	}
	ig.Group, ig.Level, ig.Parts, ig.Broken = strings.TrimPrefix(g.id, "g:"), g.level, len(g.parts), g.broken
	for i, p := range g.parts {
		if _, ok := st.present[p.Key]; ok && p.Key != "" {
			ig.Present = append(ig.Present, p.Key)
		} else {
			ig.Missing = append(ig.Missing, i)
		}
	}
	return ig
}

// unit returns what a segment counts as toward MinSegments: its output group, or
// itself.
func (st *compactState) unit(key string) string {
	if g := st.groupOf[key]; g != nil {
		return g.id
	}
	return key
}

// compactOnce is one attempt of Compact on ref, from listed when the caller
// listed the session already: it plans from the compacted segments' metadata,
// marks the inputs of outputs a stopped run left unmarked, merges every level
// that has enough live segments, and collects what the marks allow.
func (s *Store) compactOnce(ctx context.Context, ref TranscriptRef, opts CompactOptions, listed *sessionListing) (CompactResult, error) {
	res := CompactResult{Ref: ref}
	var ls sessionListing
	if listed != nil {
		ls = *listed
	} else {
		var err error
		if ls, err = s.sessionObjects(ctx, ref); err != nil {
			return res, err
		}
	}
	res.Segments = len(ls.infos)
	now, err := s.bucketNow(ctx)
	if err != nil {
		return res, err
	}
	if opts.OlderThan > 0 && now.Sub(ls.newest) < opts.OlderThan {
		res.SkippedRecent = true
		return res, nil
	}
	if ls.strict {
		// Only segments the head commits are merged, and the head then commits
		// the outputs in their place (compact_strict.go).
		err := s.compactStrict(ctx, ref, opts, ls, now, &res)
		return res, err
	}
	st, err := s.newCompactState(ctx, ref, ls.infos)
	if err != nil {
		return res, err
	}
	st.settle, st.stored = true, ls.stored
	marks, err := s.readMarks(ctx, ref, ls.marks)
	if err != nil {
		return res, err
	}
	resumed, err := s.markResumed(ctx, st, marks, now, opts, &res)
	if err != nil {
		return res, err
	}
	merged, err := s.compactLevels(ctx, st, opts, &res)
	if err != nil || res.Skipped == SkipSessionDeleted {
		return res, err
	}
	marks = append(append(marks, resumed...), merged...)
	return res, s.collect(ctx, st, marks, now, opts, &res)
}

// newCompactState plans a compaction of ref's segments infos from the metadata
// frames of the compacted ones (their inputs and groups), read with ranged
// GETs: their entries are fetched only when a check or a merge needs them.
func (s *Store) newCompactState(ctx context.Context, ref TranscriptRef, infos []SegmentInfo) (*compactState, error) {
	st := &compactState{ref: ref, infos: infos, segs: map[string]*segment.Segment{}, present: map[string]SegmentInfo{},
		contents: map[string]*entrySet{}, groupOf: map[string]*segGroup{}}
	var upper []SegmentInfo
	for _, in := range infos {
		st.present[in.Key] = in
		if in.Level > 0 {
			upper = append(upper, in)
		}
	}
	upperSegs, err := s.readMetasOf(ctx, upper)
	if err != nil {
		return nil, err
	}
	st.sup = superseders(upper, upperSegs)
	for _, g := range groupsOf(upper, upperSegs) {
		for _, p := range g.parts {
			if p.Key != "" {
				st.groupOf[p.Key] = g
			}
		}
	}
	return st, nil
}

// markResumed marks for deletion the inputs of outputs that a run which stopped
// before marking them wrote (after checking that each output holds its input),
// and returns the new marks.
func (s *Store) markResumed(ctx context.Context, st *compactState, marks []deletionMark, now time.Time, opts CompactOptions, res *CompactResult) ([]deletionMark, error) {
	marked := map[string]bool{}
	for _, m := range marks {
		for _, k := range m.Inputs {
			marked[k] = true
		}
	}
	var resume []SegmentInfo
	for _, in := range st.infos {
		if _, ok := st.supersededBy(in.Key); ok && !marked[in.Key] {
			resume = append(resume, in)
		}
	}
	if err := s.readInto(ctx, st, resume); err != nil {
		return nil, err
	}
	unmarked := map[string][]string{} // output -> its unmarked present inputs
	var outs []string
	for _, in := range resume {
		out, _ := st.supersededBy(in.Key)
		if err := s.checkContained(ctx, st, in, out); err != nil {
			return nil, err
		}
		if unmarked[out] == nil {
			outs = append(outs, out)
		}
		unmarked[out] = append(unmarked[out], in.Key)
	}
	var added []deletionMark
	for _, out := range outs {
		n := len(unmarked[out])
		res.Marked += n
		if opts.DryRun {
			// What the run does with them, as countPlanned counts the inputs
			// of the compactions planned (another run's output settles first).
			if opts.DeleteDelay > 0 || st.unsettled(out, now) {
				res.Pending += n
			} else {
				res.Deleted += n
			}
			continue
		}
		m, err := s.scheduleDelete(ctx, st.ref, out, unmarked[out], opts)
		if err != nil {
			return nil, err
		}
		added = append(added, m)
	}
	return added, nil
}

// compactLevels merges every level that has enough live segments, lowest
// first (an output counts toward the next level), or with opts.Full every live
// segment at once, marks the inputs of each output for deletion and returns the
// marks.
func (s *Store) compactLevels(ctx context.Context, st *compactState, opts CompactOptions, res *CompactResult) ([]deletionMark, error) {
	var added []deletionMark
	err := st.eachFullLevel(opts, res, func(live []SegmentInfo) (bool, error) {
		c, err := s.compactLevel(ctx, st.ref, st, live, opts)
		if err != nil {
			return false, err
		}
		if opts.DryRun {
			res.Compactions = append(res.Compactions, c)
			return true, nil
		}
		if gone, err := s.dropIfInputsGone(ctx, live, c, st.lastPut); err != nil || gone {
			if gone {
				res.Skipped = SkipSessionDeleted
			}
			return false, err
		}
		res.Compactions = append(res.Compactions, c)
		m, err := s.markInputs(ctx, st.ref, c.Output.Key, live, opts, res)
		if err != nil {
			return false, err
		}
		added = append(added, m)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return added, nil
}

// dropIfInputsGone deletes the output of c, just stored, when none of its
// inputs live exists any more, and reports whether it did. They were deleted
// while this run merged them: by a retention run or Store.Delete, and the output
// would bring the deleted session back, whole and unmarked; or by another
// compaction, whose output holds them. Either way the output holds nothing that
// is meant to be kept. A deletion of the session that has not reached the input
// found here lists the session after its deletes and removes the output then
// (docs/RETENTION.md). One HEAD when the first input is there (retention deletes
// the oldest segments last).
//
// It drops the output only when it found the inputs gone within outputSettle
// of lastPut, when the PUT of the output's last part began: later, another run
// may have deleted them on account of this very output, which must then stay
// (a deletion of the session then leaves it, and retention decides the session
// again).
func (s *Store) dropIfInputsGone(ctx context.Context, live []SegmentInfo, c Compaction, lastPut time.Time) (bool, error) {
	for _, in := range live {
		_, err := s.cfg.Bucket.Stat(ctx, in.Key)
		if err == nil {
			return false, nil
		}
		if !errors.Is(err, bucket.ErrNotFound) {
			return false, fmt.Errorf("look for input %s: %w", in.Key, err)
		}
	}
	if time.Since(lastPut) >= outputSettle {
		return false, nil
	}
	keys := make([]string, len(c.Outputs))
	for i, out := range c.Outputs {
		keys[i] = out.Key
	}
	if err := s.deleteKeys(ctx, keys); err != nil {
		return false, fmt.Errorf("delete the output of deleted inputs: %w", err)
	}
	return true, nil
}

// markInputs schedules the deletion of the inputs of the compaction, stored by
// this run, whose output is at key, and counts them in res.Marked.
func (s *Store) markInputs(ctx context.Context, ref TranscriptRef, output string, inputs []SegmentInfo, opts CompactOptions, res *CompactResult) (deletionMark, error) {
	keys := make([]string, len(inputs))
	for i, in := range inputs {
		keys[i] = in.Key
	}
	m, err := s.scheduleDelete(ctx, ref, output, keys, opts)
	if err != nil {
		return deletionMark{}, err
	}
	res.Marked += len(keys)
	m.own = true
	return m, nil
}

// bucketNow returns the time on the clock that stamps the bucket's objects
// (bucket.Clock).
func (s *Store) bucketNow(ctx context.Context) (time.Time, error) {
	t, err := s.cfg.Bucket.Now(ctx)
	if err != nil {
		return t, fmt.Errorf("read the bucket's clock: %w", err)
	}
	return t, nil
}

// sessionKey returns the full key of a segment of ref named relative to its session
// (or by a full key, perhaps under another prefix: only its last two elements count).
func (s *Store) sessionKey(ref TranscriptRef, key string) string {
	return sessionPrefix(s.cfg.Prefix, ref) + sessionRelKey(key)
}
