package transcript

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// RetentionOptions tune Retain. The zero value is usable.
type RetentionOptions struct {
	// DeleteDelay is how long a retention mark stays before Retain deletes its
	// session, measured on the bucket's clock from the mark object's LastModified.
	// Zero means DefaultDeleteDelay; DeleteAtOnce (any negative value) deletes in
	// the run that decides, with no mark.
	DeleteDelay time.Duration
	// DryRun decides and reports without writing or deleting anything.
	DryRun bool
	// Parallel is how many sessions are marked, checked or deleted at once
	// (default 1).
	Parallel int
	// OwnAgent, when not nil, selects the agents this run decides; the others are
	// not listed. Keep-last needs every session of an agent, so a run that shares a
	// bucket with others splits it by agent (a stable hash of namespace and agent),
	// never by session.
	OwnAgent func(namespace, agent string) bool
}

// RetentionAction is what Retain did to one session (in a dry run: would do).
type RetentionAction int

const (
	// RetentionKept: no policy selects the session and it holds no mark.
	RetentionKept RetentionAction = iota
	// RetentionMarked: a policy selects the session; its retention mark was written.
	RetentionMarked
	// RetentionPending: the session is marked and its delete delay has not passed.
	RetentionPending
	// RetentionDeleted: the session was deleted, every object under its prefix.
	RetentionDeleted
	// RetentionHeld: a policy selects the session, or it was marked, but a hold
	// names it; a mark is dropped.
	RetentionHeld
	// RetentionSurvived: the session was marked and a segment was written to it
	// since (RetentionResult.Unseen); the mark is dropped and the session kept.
	RetentionSurvived
	// RetentionReleased: the session was marked, nothing was written to it, but no
	// policy selects it any more (a rule changed, or newer sessions were deleted);
	// the mark is dropped.
	RetentionReleased
	// RetentionLateWrite: the session was deleted, but segments landed between the
	// check and the deletes (RetentionResult.Unseen): they remain, without the
	// entries deleted before them, and are decided again by a later run.
	RetentionLateWrite
	// RetentionDeferred: a policy selects the session, but a segment landed
	// between the decision's listing and the session's own (a write, or another
	// worker's compaction): nothing was marked or deleted, and a later run
	// decides it again.
	RetentionDeferred
)

var retentionActionNames = [...]string{"kept", "marked", "pending", "deleted", "held", "survived", "released", "late-write", "deferred"}

// String returns the action's name: kept, marked, pending, deleted, held, survived,
// released, late-write or deferred.
func (a RetentionAction) String() string {
	if a < 0 || int(a) >= len(retentionActionNames) {
		return fmt.Sprintf("RetentionAction(%d)", int(a))
	}
	return retentionActionNames[a]
}

// RetentionResult reports what Retain did (or, in a dry run, would do) to one session.
type RetentionResult struct {
	Ref    TranscriptRef
	Action RetentionAction
	// Reason says which policy selects the session and why ("" when none does; for
	// a session marked earlier, the reason of its mark).
	Reason string
	// LastUpdate is the newest LastModified of the session's segments.
	LastUpdate time.Time
	// Objects and Bytes count the objects deleted and the bytes of the segments
	// among them (in a dry run: those that would be).
	Objects int
	Bytes   int64
	// Unseen names the segments that kept the session (RetentionSurvived) or that
	// landed while it was deleted (RetentionLateWrite).
	Unseen []string
	// RankReads counts the ranged GETs of compacted segments' metadata frames
	// that ranked the session for keep-last (RetentionPolicy.KeepLast): none
	// when a level-0 segment is its newest, or no keep-last applies.
	RankReads int
}

// retainItem is one session of an agent, as the decision sees it.
type retainItem struct {
	ref        TranscriptRef
	lastUpdate time.Time
	// written ranks the session among its agent's (keep-last): the newest,
	// over its segments, of the earlier of LastModified and the key's time
	// (sessionListing.written), which a copy of the bucket does not move,
	// and for a compacted segment, of its entries' newest origin key time
	// (rankPlan.written), which compaction does not move.
	written time.Time
	// rankReads counts the metadata frames of compacted segments read to rank
	// the session (rankPlan.written).
	rankReads int
	rankErr   error // ranking it failed (rankByWrites)
	segments  int
	reason    string // why the policy selects it ("" when it does not)
	held      bool
	// The session's retention mark, when one is listed: markObj as listed, mark
	// as read (marked: one of ours; foreign: not one of ours), and the segments
	// written since it that it does not name (unseenWrites).
	markObj *bucket.ObjectInfo
	mark    retentionMark
	marked  bool
	foreign bool
	unseen  []string
	err     error // reading the mark failed
}

// Retain applies r to the sessions of agent in namespace (every agent when agent is
// "", every one OwnAgent selects): it lists each agent's sessions with one
// recursive listing (and, for keep-last, the metadata frame of each session's
// newest compacted segment that may outrank its level-0 ones), ranks them by
// when they were last written (see RetentionPolicy.KeepLast) and decides each against the agent's policy
// (Retention.PolicyFor) on the bucket's clock. A selected session gets a retention
// mark (RetentionMarkName) naming its segments; once the mark is DeleteDelay old, a
// later run lists the session again and deletes it only if it holds no segment the
// mark does not name (other than compactions of those): a session written to
// meanwhile survives. A hold wins over every policy, and a mark whose session no
// policy selects any more is dropped. While a marked session gets nothing but
// compactions of the segments its mark names, its last update stays the one the
// mark recorded. done is called once per session with a
// segment or a mark, from several goroutines at once; an error of one session goes
// to done and does not stop the others. Retain returns an error when r is invalid
// (wrapping ErrInvalidRetention), a listing fails or ctx ends.
//
// Deletion removes the strict head first (a strict append then fails instead of
// committing), then the segments, newest first, then the other objects, and the
// mark last: a run that stops part way leaves the mark, and the next run finishes.
// It lists the session again afterwards: a segment that landed between the check
// and the deletes is not deleted and is reported (RetentionLateWrite).
func (s *Store) Retain(ctx context.Context, namespace, agent string, r *Retention, opts RetentionOptions,
	done func(RetentionResult, error)) error {
	if err := r.Validate(); err != nil {
		return err
	}
	nsPrefix, _, visible, err := s.namespaceListing(namespace, agent)
	if err != nil || !visible {
		return err
	}
	switch {
	case opts.DeleteDelay == 0:
		opts.DeleteDelay = DefaultDeleteDelay
	case opts.DeleteDelay < 0:
		opts.DeleteDelay = 0
	}
	namespace = TranscriptRef{Namespace: namespace}.Norm().Namespace
	agents := []string{agent}
	if agent == "" {
		if agents, err = s.ListAgents(ctx, namespace); err != nil {
			return err
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, opts.Parallel))
	for _, a := range agents {
		if opts.OwnAgent != nil && !opts.OwnAgent(namespace, a) {
			continue
		}
		items, now, err := s.retentionItems(gctx, r, namespace, a, nsPrefix, opts.Parallel)
		if err != nil {
			return errors.Join(err, g.Wait())
		}
		for _, it := range items {
			if it.err == nil && it.reason == "" && it.markObj == nil {
				done(RetentionResult{Ref: it.ref, LastUpdate: it.lastUpdate, RankReads: it.rankReads}, nil)
				continue
			}
			g.Go(func() error {
				done(s.retainOne(gctx, it, opts, now))
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// retentionItems lists the sessions of agent, reads their retention marks and
// decides each session against its policy, on the bucket's clock read after the
// listing (now).
func (s *Store) retentionItems(ctx context.Context, r *Retention, namespace, agent, nsPrefix string, parallel int) ([]*retainItem, time.Time, error) {
	var items []*retainItem
	listings := map[*retainItem]sessionListing{} // of the marked sessions
	plans := map[*retainItem]rankPlan{}          // of the sessions a compacted segment may rank
	p, _ := r.PolicyFor(namespace, agent)
	lp := nsPrefix + agent + "/"
	err := s.listSessions(ctx, namespace, nsPrefix, lp, func(ref TranscriptRef, ls sessionListing) error {
		if len(ls.hiding) > 0 {
			// What the listing shows is not the session: decide nothing.
			items = append(items, &retainItem{ref: ref, lastUpdate: ls.newest, segments: len(ls.infos), err: hidingError(ls.hiding)})
			return nil
		}
		if len(ls.infos) == 0 && ls.retention == nil {
			return nil
		}
		it := &retainItem{ref: ref, lastUpdate: ls.newest, written: ls.written, segments: len(ls.infos), markObj: ls.retention}
		items = append(items, it)
		if it.markObj != nil {
			listings[it] = ls
		}
		if p.KeepLast > 0 {
			if rp := planRank(ls); len(rp.cands) > 0 {
				plans[it] = rp
			}
		}
		return nil
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	now, err := s.bucketNow(ctx)
	if err != nil {
		return nil, now, err
	}
	rankFailed := false
	if len(plans) > 0 && rankedCount(items) > p.KeepLast {
		// Keep-last selects some: rank the sessions whose newest segment may be
		// a compaction by their entries' writes.
		if rankFailed = s.rankByWrites(ctx, plans, parallel); ctx.Err() != nil {
			return nil, now, ctx.Err()
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, parallel))
	for it, ls := range listings {
		g.Go(func() error {
			it.err = s.readItemMark(gctx, it, ls)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, now, err
	}
	if rankFailed {
		p.KeepLast = 0
	}
	decideRetention(r, p, now, items)
	if rankFailed {
		settleRankErrors(items, agent)
	}
	return items, now, ctx.Err()
}

// readItemMark reads the retention mark of it and the segments written since that
// it does not name. While nothing but compactions of the segments it names was
// written, the session's last update is the one the mark recorded: a compaction
// stores a new object but no new entry. (Only the compactor role may write a
// mark, and it may delete the session anyway, so trusting the recorded time
// grants nothing; it is never later than the newest listed segment.)
func (s *Store) readItemMark(ctx context.Context, it *retainItem, ls sessionListing) error {
	m, ok, err := s.readRetentionMark(ctx, *it.markObj)
	switch {
	case errors.Is(err, bucket.ErrNotFound):
		it.markObj = nil // another job dropped it
		return nil
	case err != nil:
		return err
	case !ok:
		it.foreign = true
		return nil
	}
	it.mark, it.marked = m, true
	if it.unseen, err = s.unseenWrites(ctx, ls, m.Segments); err != nil {
		return err
	}
	if len(it.unseen) == 0 && !m.LastUpdate.IsZero() && m.LastUpdate.Before(it.lastUpdate) {
		it.lastUpdate = m.LastUpdate
		it.written = earlier(it.written, m.LastUpdate)
	}
	return nil
}

// decideRetention ranks the sessions of one agent newest first (by when they
// were last written, then by last update, then session id) and sets the
// reason of each one p selects, and whether a hold names it. A session whose
// segments are all gone but whose mark remains is a deletion that stopped part
// way: it is selected, to be finished.
//
// The ranking does not go by last update alone: a copy of the bucket (rclone,
// mc mirror) stamps every object with the time it copied it, in the tool's
// order, and keep-last run on a restored copy would keep the sessions copied
// last, not the newest. The time in a segment's key is the writer's, copied
// with the key; the earlier of the two is the bucket's time on the original
// (a writer whose clock runs ahead cannot move its sessions up) and the
// writer's on a copy. A compacted segment's LastModified and key time are the
// compaction's, so retentionItems lowers its time to its entries' newest
// origin key time (rankPlan.written) before the ranking. Max-age stays on the
// bucket's clock alone: a copy or a compaction makes sessions look younger,
// never older, so it never deletes one early.
func decideRetention(r *Retention, p RetentionPolicy, now time.Time, items []*retainItem) {
	slices.SortFunc(items, func(a, b *retainItem) int {
		if c := b.written.Compare(a.written); c != 0 {
			return c
		}
		if c := b.lastUpdate.Compare(a.lastUpdate); c != 0 {
			return c
		}
		return strings.Compare(a.ref.SessionID, b.ref.SessionID)
	})
	rank := 0
	for _, it := range items {
		it.held = r.Held(it.ref)
		if it.segments == 0 {
			it.reason = "no segment left: finishing a deletion"
			continue
		}
		rank++
		var why []string
		if age := now.Sub(it.lastUpdate); p.MaxAge > 0 && age > p.MaxAge {
			why = append(why, fmt.Sprintf("max-age %s: last update %s ago", FormatAge(p.MaxAge), FormatAge(age)))
		}
		if p.KeepLast > 0 && rank > p.KeepLast {
			why = append(why, fmt.Sprintf("keep-last %d: number %d by last write", p.KeepLast, rank))
		}
		it.reason = strings.Join(why, "; ")
	}
}

// FormatAge formats d in days and hours past a day ("41d3h", "30d"), and as
// time.Duration does below (rounded to the second).
func FormatAge(d time.Duration) string {
	const day = 24 * time.Hour
	if d < day {
		return d.Round(time.Second).String()
	}
	days, hours := d/day, (d%day+30*time.Minute)/time.Hour
	if hours == 24 {
		days, hours = days+1, 0
	}
	if hours == 0 {
		return fmt.Sprintf("%dd", days)
	}
	return fmt.Sprintf("%dd%dh", days, hours)
}
