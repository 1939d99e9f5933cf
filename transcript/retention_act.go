package transcript

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// retainOne acts on one session the decision selected or found marked.
func (s *Store) retainOne(ctx context.Context, it *retainItem, opts RetentionOptions, now time.Time) (RetentionResult, error) {
	res := RetentionResult{Ref: it.ref, Reason: it.reason, LastUpdate: it.lastUpdate, Unseen: it.unseen, RankReads: it.rankReads}
	if it.err != nil {
		return res, it.err
	}
	if it.foreign && !opts.DryRun {
		// Not a mark of ours: never trusted, replaced by a decision of this run.
		if err := s.dropRetentionMark(ctx, it.ref); err != nil {
			return res, err
		}
	}
	if res.Reason == "" && it.marked {
		res.Reason = it.mark.Reason
	}
	switch {
	case it.held:
		res.Action = RetentionHeld
		if it.reason == "" && !it.marked {
			res.Action = RetentionKept
		}
		return res, s.dropMarkOf(ctx, it, opts)
	case !it.marked && it.reason == "":
		return res, nil
	case !it.marked:
		return s.markRetained(ctx, it, opts, res)
	case len(it.unseen) > 0:
		// Written since the mark: the decision is void, whatever a policy says now.
		res.Action = RetentionSurvived
		return res, s.dropMarkOf(ctx, it, opts)
	case it.reason == "":
		res.Action = RetentionReleased
		return res, s.dropMarkOf(ctx, it, opts)
	case opts.DeleteDelay > 0 && now.Sub(it.mark.modTime) < opts.DeleteDelay:
		res.Action = RetentionPending
		return res, nil
	default:
		return s.deleteRetained(ctx, it.ref, it.mark.Segments, opts, res)
	}
}

// dropMarkOf drops the mark of it, if it has one of ours, except in a dry run.
func (s *Store) dropMarkOf(ctx context.Context, it *retainItem, opts RetentionOptions) error {
	if !it.marked || opts.DryRun {
		return nil
	}
	return s.dropRetentionMark(ctx, it.ref)
}

// markRetained writes the retention mark of a session the policy selects (with
// DeleteAtOnce: deletes it), from a listing of its own: a session written to since
// the decision's listing is left for the next run (RetentionDeferred).
func (s *Store) markRetained(ctx context.Context, it *retainItem, opts RetentionOptions, res RetentionResult) (RetentionResult, error) {
	ls, err := s.sessionObjects(ctx, it.ref)
	if err != nil {
		return res, err
	}
	if ls.newest.After(it.lastUpdate) {
		res.Action, res.LastUpdate = RetentionDeferred, ls.newest
		return res, nil
	}
	if opts.DeleteDelay == 0 {
		return s.deleteRetained(ctx, it.ref, relKeys(ls.infos), opts, res)
	}
	res.Action = RetentionMarked
	if opts.DryRun {
		return res, nil
	}
	created, err := s.putRetentionMark(ctx, it.ref, ls, it.reason)
	if !created && err == nil {
		res.Action = RetentionPending // another job marked it first
	}
	return res, err
}

// deleteRetained lists ref again and, unless it holds a segment known (the
// segments named when it was decided) has not seen, deletes every object under its
// prefix in order (deleteSession), then checks for segments that landed meanwhile.
func (s *Store) deleteRetained(ctx context.Context, ref TranscriptRef, known []string, opts RetentionOptions, res RetentionResult) (RetentionResult, error) {
	ls, err := s.sessionObjects(ctx, ref)
	if err != nil {
		return res, err
	}
	if res.Unseen, err = s.unseenWrites(ctx, ls, known); err != nil {
		return res, err
	}
	if len(res.Unseen) > 0 {
		res.Action = RetentionSurvived
		if opts.DryRun {
			return res, nil
		}
		return res, s.dropRetentionMark(ctx, ref)
	}
	res.Action = RetentionDeleted
	keys := s.deletionOrder(ref, ls)
	res.Objects = len(keys)
	for _, in := range ls.infos {
		res.Bytes += in.Size
	}
	if opts.DryRun {
		return res, nil
	}
	if err := s.deleteSession(ctx, ls.strict, keys); err != nil {
		return res, err
	}
	after, err := s.sessionObjects(ctx, ref)
	if err != nil {
		return res, err
	}
	late, err := s.unseenWrites(ctx, after, append(known, relKeys(ls.infos)...))
	if err != nil {
		return res, err
	}
	if len(late) > 0 {
		res.Action, res.Unseen = RetentionLateWrite, late
	} else if rest := s.deletionOrder(ref, after); len(rest) > 0 {
		// Compactions of deleted segments, marks: written meanwhile by another job.
		if err := s.deleteSession(ctx, after.strict, rest); err != nil {
			return res, err
		}
		res.Objects += len(rest)
	}
	return res, s.dropRetentionMark(ctx, ref)
}

// deletionOrder returns the keys of ls but its retention mark, in the order a
// session is deleted: the strict head, the level-0 segments newest first, then
// each higher level newest first (so a deletion that stops part way leaves the
// oldest history, whose parents are all there), the deletion marks, the cached
// summary (left behind, it would name a session that no longer exists), and keys
// outside the layout.
func (s *Store) deletionOrder(ref TranscriptRef, ls sessionListing) []string {
	var keys []string
	if ls.strict {
		keys = append(keys, s.headKey(ref))
	}
	segs := slices.Clone(ls.infos)
	slices.SortFunc(segs, func(a, b SegmentInfo) int {
		if a.Level != b.Level {
			return a.Level - b.Level
		}
		return strings.Compare(b.Key, a.Key)
	})
	for _, in := range segs {
		keys = append(keys, in.Key)
	}
	for _, m := range ls.marks {
		keys = append(keys, m.Key)
	}
	if ls.summary != "" {
		keys = append(keys, ls.summary)
	}
	return append(keys, ls.stray...)
}

// deleteSession deletes keys in order: the strict head alone first (when strict,
// keys[0]), then the rest in batches.
func (s *Store) deleteSession(ctx context.Context, strict bool, keys []string) error {
	if strict && len(keys) > 0 {
		if err := s.cfg.Bucket.Delete(ctx, keys[0]); err != nil {
			return fmt.Errorf("delete %s: %w", keys[0], err)
		}
		keys = keys[1:]
	}
	if err := s.deleteKeys(ctx, keys); err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}

// dropRetentionMark deletes ref's retention mark.
func (s *Store) dropRetentionMark(ctx context.Context, ref TranscriptRef) error {
	key := s.retentionMarkKey(ref)
	if err := s.cfg.Bucket.Delete(ctx, key); err != nil {
		return fmt.Errorf("delete retention mark %s: %w", key, err)
	}
	return nil
}
