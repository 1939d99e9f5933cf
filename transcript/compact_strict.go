package transcript

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// Reasons a compaction left a strict session, or its levels from some level up,
// as they were (CompactResult.Skipped).
const (
	// SkipCommitOrder: the segments of a level to merge do not hold their
	// entries in commit order by key (written by writers whose clocks disagreed,
	// before heads fed the clock): a merge would change the order in which the
	// head replays them.
	SkipCommitOrder = "committed segments are not in key order"
	// SkipHeadMoved: another compaction replaced segments this one merged
	// before it could commit its output; the output was deleted.
	SkipHeadMoved = "another compaction committed first"
)

// A strict session is compacted like any other, with three differences. Only
// the segments its head commits take part (what it names, and what the compacted
// segments it names hold), so a segment no head commits (a lost head race, an
// append that never wrote its head, a compaction that lost the race for the
// head) is never merged. The outputs are committed by a conditional write of the
// head that replaces the merged run of segments by them, in their place (commit
// order is the head's order, so an output of segments whose keys are in commit
// order holds their entries in that order); an append that committed meanwhile
// makes the write fail, and it is made again on the new head, while a
// compaction that replaced some of the same segments first wins, and this one's
// outputs are deleted (SkipHeadMoved). Only after the head names the outputs are
// the inputs marked for deletion, so a reader of the new head never needs them,
// and a reader of an older head reads them during the delete delay (or reads the
// head again when they are gone). Segments the head does not commit are
// deleted once CompactOptions.UncommittedAge old.

// headOp is one replacement a compaction makes in a strict head: a run of
// committed segments (relative keys, in head order) by the output.
type headOp struct{ inputs, outputs []string }

// compactStrict is compactOnce for strict session ref, whose listing ls names a
// head.
func (s *Store) compactStrict(ctx context.Context, ref TranscriptRef, opts CompactOptions, ls sessionListing, now time.Time, res *CompactResult) error {
	h, err := s.ReadHead(ctx, ref)
	if err != nil {
		return err
	}
	committed, err := s.committedClosure(ctx, ref, h)
	if err != nil {
		return err
	}
	var infos, loose []SegmentInfo
	for _, in := range ls.infos {
		if committed[sessionRelKey(in.Key)] {
			infos = append(infos, in)
		} else {
			loose = append(loose, in)
		}
	}
	st, err := s.newCompactState(ctx, ref, infos)
	if err != nil {
		return err
	}
	for _, rel := range h.Segments {
		if by, ok := st.sup[rel]; ok && by.Level > relLevel(rel) {
			return fmt.Errorf("%w: the head names %s and %s, which holds it", ErrCompactInput, rel, sessionRelKey(by.Key))
		}
	}
	marks, err := s.readMarks(ctx, ref, ls.marks)
	if err != nil {
		return err
	}
	resumed, err := s.markResumed(ctx, st, marks, now, opts, res)
	if err != nil {
		return err
	}
	ops, err := s.compactStrictLevels(ctx, st, h, opts, res)
	if err != nil {
		return err
	}
	merged, err := s.commitCompactions(ctx, st, h, ops, opts, res)
	if err != nil || res.Skipped == SkipHeadMoved {
		return err
	}
	marks = append(append(marks, resumed...), merged...)
	if err := s.collect(ctx, st, marks, now, opts, res); err != nil {
		return err
	}
	return s.collectUncommitted(ctx, ref, loose, ls, now, opts, res)
}

// compactStrictLevels merges every level of st that has enough live segments,
// lowest first, as compactLevels does, and returns the replacements the head must
// make. A level whose live segments are not a run of the head, or do not hold
// their entries in head order by origin, stops the merging (SkipCommitOrder).
func (s *Store) compactStrictLevels(ctx context.Context, st *compactState, h Head, opts CompactOptions, res *CompactResult) ([]headOp, error) {
	var ops []headOp
	wh := h // the head as the merges so far would leave it
	err := st.eachFullLevel(opts, res, func(live []SegmentInfo) (bool, error) {
		if err := s.readInto(ctx, st, live); err != nil {
			return false, err
		}
		ordered, ok := inHeadOrder(wh, live)
		if !ok || !originsIncrease(st, ordered) {
			res.Skipped = SkipCommitOrder
			return false, nil
		}
		c, err := s.compactLevel(ctx, st.ref, st, live, opts)
		if err != nil {
			return false, err
		}
		res.Compactions = append(res.Compactions, c)
		if opts.DryRun {
			return true, nil
		}
		op := headOp{outputs: relKeys(c.Outputs)}
		for _, in := range ordered {
			op.inputs = append(op.inputs, sessionRelKey(in.Key))
		}
		if wh, err = wh.Replace(op.inputs, op.outputs); err != nil {
			return false, err
		}
		ops = append(ops, op)
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return ops, nil
}

// inHeadOrder returns live (segments of one level) in the order h names them,
// and whether they are one run of h, one right after the other.
func inHeadOrder(h Head, live []SegmentInfo) ([]SegmentInfo, bool) {
	pos := make(map[string]int, len(h.Segments))
	for i, rel := range h.Segments {
		pos[rel] = i
	}
	out := slices.Clone(live)
	for _, in := range out {
		if _, ok := pos[sessionRelKey(in.Key)]; !ok {
			return nil, false
		}
	}
	slices.SortFunc(out, func(a, b SegmentInfo) int { return pos[sessionRelKey(a.Key)] - pos[sessionRelKey(b.Key)] })
	for i := 1; i < len(out); i++ {
		if pos[sessionRelKey(out[i].Key)] != pos[sessionRelKey(out[i-1].Key)]+1 {
			return nil, false
		}
	}
	return out, true
}

// originsIncrease reports whether the entries of ordered (decoded in st) come in
// origin order when read segment after segment, each in its own order: then
// their merge holds them in that same order, and the head replays the output as
// it replayed its inputs.
func originsIncrease(st *compactState, ordered []SegmentInfo) bool {
	var last Origin
	for _, in := range ordered {
		seg := st.segs[in.Key]
		if seg == nil {
			return false
		}
		origin := originsOf(in, seg)
		for pos := range seg.Entries {
			o := origin(pos)
			if last.Key != "" && o.Compare(last) <= 0 {
				return false
			}
			last = o
		}
	}
	return true
}

// commitCompactions makes the head commit the outputs of ops by a conditional
// write from h, made again on the head as it is now when appends moved it
// meanwhile (at most Config.MaxRelists times), and then schedules the deletion
// of each compaction's inputs and returns the marks. When another compaction
// replaced some of the inputs first, it deletes the outputs and sets
// res.Skipped to SkipHeadMoved; when the head write fails otherwise, it deletes
// them and returns the error.
func (s *Store) commitCompactions(ctx context.Context, st *compactState, h Head, ops []headOp, opts CompactOptions, res *CompactResult) ([]deletionMark, error) {
	if len(ops) == 0 {
		return nil, nil
	}
	done, err := s.writeCompactedHead(ctx, st.ref, h, ops)
	if err != nil || !done {
		var outs []string
		for _, op := range ops {
			outs = append(outs, op.outputs...)
		}
		for _, rel := range outs {
			_ = s.cfg.Bucket.Delete(ctx, s.sessionKey(st.ref, rel)) // best effort: uncommitted either way
		}
		res.Compactions = nil
		if err == nil {
			res.Skipped = SkipHeadMoved
		}
		return nil, err
	}
	var marks []deletionMark
	for _, c := range res.Compactions {
		m, err := s.markInputs(ctx, st.ref, c.Output.Key, c.Inputs, opts, res)
		if err != nil {
			return nil, err
		}
		marks = append(marks, m)
	}
	return marks, nil
}

// writeCompactedHead writes the head that applies ops to h, conditionally on h,
// and on the head as re-read after each conflict. It reports false when ops no
// longer apply (another compaction replaced an input).
func (s *Store) writeCompactedHead(ctx context.Context, ref TranscriptRef, h Head, ops []headOp) (bool, error) {
	final := finalOutputs(ops)
	base := h
	for attempt := 0; ; attempt++ {
		next, err := applyOps(base, ops)
		if err != nil {
			return false, nil
		}
		_, werr := s.WriteHead(ctx, ref, base, next)
		if werr == nil {
			return true, nil
		}
		cur, err := s.ReadHead(ctx, ref)
		if err != nil {
			return false, err
		}
		if !slices.ContainsFunc(final, func(rel string) bool { return !cur.Commits(rel) }) {
			return true, nil // the write took effect; its answer was lost
		}
		if !errors.Is(werr, ErrConflict) {
			return false, werr
		}
		if attempt >= s.cfg.MaxRelists {
			return false, nil
		}
		base = cur
	}
}

// applyOps applies ops to h in order.
func applyOps(h Head, ops []headOp) (Head, error) {
	for _, op := range ops {
		var err error
		if h, err = h.Replace(op.inputs, op.outputs); err != nil {
			return h, err
		}
	}
	return h, nil
}

// finalOutputs returns the outputs of ops that no later op merged again: those
// the head names afterwards.
func finalOutputs(ops []headOp) []string {
	merged := map[string]bool{}
	for _, op := range ops {
		for _, in := range op.inputs {
			merged[in] = true
		}
	}
	var out []string
	for _, op := range ops {
		for _, o := range op.outputs {
			if !merged[o] {
				out = append(out, o)
			}
		}
	}
	return out
}

// collectUncommitted deletes the segments among loose (listed in ls, and not
// committed by the head read at the start of the run) that were stored at least
// opts.UncommittedAge ago by the bucket's clock (now), in one batch. It reads
// the head again first and keeps those it commits now: an append whose head
// write landed while this run compacted (its segment stored before the run read
// the head) is committed, and deleting its segment would lose it.
func (s *Store) collectUncommitted(ctx context.Context, ref TranscriptRef, loose []SegmentInfo, ls sessionListing, now time.Time, opts CompactOptions, res *CompactResult) error {
	var due []string
	for _, in := range loose {
		if stored, ok := ls.stored[in.Key]; ok && !stored.IsZero() && now.Sub(stored) >= opts.UncommittedAge {
			due = append(due, in.Key)
		}
	}
	if len(due) == 0 {
		return nil
	}
	h, err := s.ReadHead(ctx, ref)
	switch {
	case errors.Is(err, bucket.ErrNotFound):
		// The session is being deleted: its segments go anyway.
	case err != nil:
		return fmt.Errorf("read the head again before deleting uncommitted segments: %w", err)
	default:
		committed, err := s.committedClosure(ctx, ref, h)
		if err != nil {
			return err
		}
		due = slices.DeleteFunc(due, func(k string) bool { return committed[sessionRelKey(k)] })
	}
	res.Uncommitted += len(due)
	if opts.DryRun || len(due) == 0 {
		return nil
	}
	if err := s.deleteKeys(ctx, due); err != nil && !errors.Is(err, bucket.ErrNotFound) {
		return fmt.Errorf("delete uncommitted segments: %w", err)
	}
	return nil
}
