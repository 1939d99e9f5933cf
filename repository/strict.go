package repository

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
	return s.appendStrict(ctx, expectedHead, entries)
}

func (s *Session) appendStrict(ctx context.Context, expected string, raws [][]byte) error {
	batch, at, err := s.repo.parseBatch(raws)
	if err != nil {
		return fmt.Errorf("append to session %q: %w", s.id, err)
	}
	r := s.repo
	hs, err := r.store.ReadHead(ctx, s.ref)
	if errors.Is(err, bucket.ErrNotFound) {
		return notFound(s.id)
	}
	if err != nil {
		return fmt.Errorf("append to session %q: %w", s.id, headError(err))
	}
	if err := s.syncHead(ctx, hs); err != nil {
		return err
	}
	if s.broken != nil {
		return fmt.Errorf("append: %w", s.broken)
	}
	fresh, err := s.fresh(batch, at)
	if err != nil || len(fresh) == 0 {
		return err
	}
	if hs.Entry != expected {
		return fmt.Errorf("append to session %q: %w: %w: expected head %q, committed head %q",
			s.id, transcript.ErrConflict, ErrStaleHead, expected, hs.Entry)
	}
	newHead := s.headAfter(hs.Entry, fresh)
	_, next, err := r.store.CommitSegment(ctx, s.ref, hs, rawsOf(fresh), r.writer, newHead)
	switch {
	case errors.Is(err, bucket.ErrNotFound):
		return notFound(s.id)
	case errors.Is(err, transcript.ErrConflict):
		return fmt.Errorf("append to session %q: %w: %w", s.id, ErrStaleHead, err)
	case err != nil:
		return fmt.Errorf("append to session %q: %w", s.id, err)
	}
	if next.Version == hs.Version+1 {
		s.hs, s.leaf = next, newHead
	} else if err := s.syncHead(ctx, next); err != nil {
		// The append committed, and other writers' commits followed.
		return err
	}
	s.added(fresh)
	return nil
}

// headError marks an error reading a strict session's head object that is
// damaged (transcript.ErrInvalidHead) as ErrHeadMismatch.
func headError(err error) error {
	if errors.Is(err, transcript.ErrInvalidHead) {
		return fmt.Errorf("%w: %w", ErrHeadMismatch, err)
	}
	return err
}

// syncHead brings the cache of a strict session to the committed head hs: it reads
// the segments committed since the head this handle knew, appending their
// entries to the sequence, or reloads everything when the head did not grow from
// it.
func (s *Session) syncHead(ctx context.Context, hs transcript.Head) error {
	old := s.hs.Segments
	if hs.Same(s.hs) {
		return nil
	}
	if len(hs.Segments) < len(old) || !slices.Equal(hs.Segments[:len(old)], old) {
		return s.load(ctx)
	}
	for _, rel := range hs.Segments[len(old):] {
		if err := s.readCommitted(ctx, rel); err != nil {
			return err
		}
	}
	s.hs, s.leaf = hs, hs.Entry
	return nil
}

// headAfter returns the active leaf after appending fresh to a session whose
// active leaf is head, by pi's rule (pi.LeafMoveOf) applied entry by entry.
func (s *Session) headAfter(head string, fresh []pi.Entry) string {
	isEntry := func(id string) bool {
		raw, ok := s.byID[id]
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
