package repository

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// AppendIf appends entries to a strict session if its committed head is
// expectedHead ("" for a session without entries); otherwise it fails with an
// error wrapping transcript.ErrConflict and ErrStaleHead and commits nothing. A retry of an
// append that committed succeeds (idempotency is checked first). After a
// successful call the head is the last entry appended, or a leaf entry's target.
func (s *Session) AppendIf(ctx context.Context, expectedHead string, entries ...[]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.asOf.IsZero() {
		return fmt.Errorf("append to session %q: %w", s.id, ErrReadOnly)
	}
	if !s.strict {
		return fmt.Errorf("append to session %q: %w: an expected head needs a strict session", s.id, ErrInvalid)
	}
	return s.appendStrict(ctx, expectedHead, entries, false)
}

// appendStrict is AppendIf; owned: raws are handed over (see parseBatch).
func (s *Session) appendStrict(ctx context.Context, expected string, raws [][]byte, owned bool) error {
	batch, at, err := s.repo.parseBatch(raws, owned)
	if err != nil {
		return fmt.Errorf("append to session %q: %w", s.id, err)
	}
	r := s.repo
	hs, err := r.store.ReadHeadSince(ctx, s.ref, s.hs)
	if errors.Is(err, bucket.ErrNotFound) {
		return notFound(s.id)
	}
	if err != nil {
		return fmt.Errorf("append to session %q: %w", s.id, headError(err))
	}
	if s.stale {
		err = s.load(ctx)
	} else {
		err = s.syncHead(ctx, hs)
	}
	if err != nil {
		return err
	}
	if s.broken != nil {
		return fmt.Errorf("append: %w", s.broken)
	}
	cur := s.hs
	stale := func() error {
		return fmt.Errorf("append to session %q: %w: %w: expected head %q, committed head %q",
			s.id, transcript.ErrConflict, ErrStaleHead, expected, cur.Entry)
	}
	fresh, err := s.fresh(batch, at)
	var ee *EntryError
	if errors.As(err, &ee) && ee.RefersTo != "" && cur.Entry != expected {
		// A parent the session lacks, from a writer whose head is not the
		// committed one: its view is stale (the session was deleted and created
		// again, say), which it can act on; the unknown parent follows from that.
		return stale()
	}
	if err != nil || len(fresh) == 0 {
		return err
	}
	if cur.Entry != expected {
		return stale()
	}
	newHead := s.headAfter(cur.Entry, fresh)
	info, next, err := r.store.CommitParsed(ctx, s.ref, cur, parsedOf(fresh), r.writer, newHead, s.summaryAfter(cur.Summary, fresh))
	switch {
	case errors.Is(err, bucket.ErrNotFound):
		return notFound(s.id)
	case errors.Is(err, transcript.ErrConflict):
		return fmt.Errorf("append to session %q: %w: %w", s.id, ErrStaleHead, err)
	case err != nil:
		return fmt.Errorf("append to session %q: %w", s.id, err)
	}
	if next.Version != cur.Version+1 {
		// The append committed, and other writers' commits followed.
		return s.syncHead(ctx, next)
	}
	s.added(info, 0, fresh)
	s.hs, s.leaf = next, newHead
	return nil
}

// summaryAfter returns the summary of the session after appending fresh to it,
// from prev, its summary as of the head appended to (nil, for a head of format
// 1: from what the handle holds). The store sets Updated.
func (s *Session) summaryAfter(prev *transcript.Summary, fresh []pi.Entry) *transcript.Summary {
	var sum transcript.Summary
	if prev != nil {
		sum = *prev
	} else {
		info := s.info()
		sum = transcript.Summary{Created: info.Created, Cwd: info.Cwd, ParentSession: info.ParentSession,
			Name: summaryName(info.Name), Entries: info.Entries}
	}
	sum.Entries += len(fresh)
	if name := pi.SessionName(fresh); name != "" {
		sum.Name = summaryName(name)
	}
	return &sum
}

// headError marks an error reading a strict session's head object that is
// damaged (transcript.ErrInvalidHead) as ErrHeadMismatch.
func headError(err error) error {
	if errors.Is(err, transcript.ErrInvalidHead) {
		return fmt.Errorf("%w: %w", ErrHeadMismatch, err)
	}
	return err
}

// headAfter returns the active leaf after appending fresh to a session whose
// active leaf is head, by pi's rule (pi.LeafMoveOf) applied entry by entry.
func (s *Session) headAfter(head string, fresh []pi.Entry) string {
	isEntry := func(id string) bool {
		raw, ok := s.index()[id]
		if !ok {
			for _, e := range fresh {
				if e.ID() == id {
					raw, ok = e.Raw(), true
				}
			}
		}
		if !ok {
			return false
		}
		e, err := pi.ParseEntry(raw)
		return err == nil && e.Type() != pi.TypeLeaf
	}
	for _, e := range fresh {
		switch move, target := pi.LeafMoveOf(e, isEntry); move {
		case pi.MoveTo, pi.MoveToTarget:
			head = target
		case pi.MoveToNull:
			head = ""
		}
	}
	return head
}

// CollectUncommitted deletes the segments of strict session id that its head does
// not commit and that were created more than olderThan ago (a writer that lost a
// head race, or crashed between its segment and its head write). olderThan must
// exceed the longest time between a segment's creation and its head write, clock
// skew included, so that an append in progress keeps its segment. It lists before
// it reads the head, so a segment committed in between is kept. It returns how
// many segments it deleted; a default-mode session has none to collect. Strict
// sessions must be written only through a Repository: a segment that a
// SessionTree's mirror uploads is not committed, is invisible to strict readers,
// and is collected here.
func (r *Repository) CollectUncommitted(ctx context.Context, id string, olderThan time.Duration) (int, error) {
	s, err := r.newSession(id)
	if err != nil {
		return 0, err
	}
	n, err := r.store.DeleteUncommitted(ctx, s.ref, r.now().Add(-olderThan))
	if errors.Is(err, bucket.ErrNotFound) {
		return 0, notFound(id)
	}
	if err != nil {
		return n, fmt.Errorf("collect session %q: %w", id, headError(err))
	}
	return n, nil
}
