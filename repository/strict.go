package repository

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// AppendIf appends entries to a strict session if its committed head is
// expectedHead ("" for a session without entries); otherwise it fails with an
// error wrapping ErrConflict and ErrStaleHead and commits nothing. A retry of an
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
	batch, err := parseBatch(raws)
	if err != nil {
		return fmt.Errorf("append to session %q: %w", s.id, err)
	}
	r := s.repo
	hs, ok, err := r.readHead(ctx, s.headKey())
	if err != nil {
		return fmt.Errorf("append to session %q: %w", s.id, err)
	}
	if !ok {
		return notFound(s.id)
	}
	if err := s.syncHead(ctx, hs); err != nil {
		return err
	}
	if s.broken != nil {
		return fmt.Errorf("append: %w", s.broken)
	}
	fresh, err := s.fresh(batch)
	if err != nil || len(fresh) == 0 {
		return err
	}
	if hs.Head != expected {
		return fmt.Errorf("append to session %q: %w: %w: expected head %q, committed head %q",
			s.id, ErrConflict, ErrStaleHead, expected, hs.Head)
	}
	newHead := s.headAfter(hs.Head, fresh)
	obj, err := r.store.PrepareSegment(s.ref, rawsOf(fresh), r.writer)
	if err != nil {
		return fmt.Errorf("append to session %q: %w", s.id, err)
	}
	if err := r.store.PutSegment(ctx, obj.Info.Key, obj.Data); err != nil {
		return fmt.Errorf("append to session %q: %w", s.id, err)
	}
	rel := s.relName(obj.Info.Key)
	next, err := r.writeHead(ctx, s.headKey(), hs.commit(rel, newHead), bucket.Cond{IfMatch: hs.etag})
	if err != nil {
		return s.commitFailed(ctx, obj.Info.Key, fresh, err)
	}
	s.hs, s.leaf = next, newHead
	s.added(fresh)
	return nil
}

// commitFailed handles a failed head write for the segment at key: if the head
// names the segment after all (a lost response to a request that succeeded), the
// append succeeded; if the condition failed, the segment is uncommitted and is
// removed at once (CollectUncommitted would remove it later); any other failure
// is reported as is, leaving the segment to CollectUncommitted.
func (s *Session) commitFailed(ctx context.Context, key string, fresh []pi.Entry, werr error) error {
	cur, ok, err := s.repo.readHead(ctx, s.headKey())
	if err == nil && ok && cur.names(s.relName(key)) {
		if err := s.syncHead(ctx, cur); err != nil {
			return err
		}
		s.added(fresh)
		return nil
	}
	if err != nil || !errors.Is(werr, bucket.ErrPreconditionFailed) {
		return fmt.Errorf("append to session %q: %w", s.id, werr)
	}
	_ = s.repo.bucket.Delete(ctx, key) // best effort: garbage either way
	if !ok {
		return notFound(s.id)
	}
	return fmt.Errorf("append to session %q: %w: %w: another writer committed first (head %q)",
		s.id, ErrConflict, ErrStaleHead, cur.Head)
}

// syncHead brings the cache of a strict session to the committed head hs: it reads
// the segments committed since the head this handle knew, or reloads everything
// when the head did not grow from it.
func (s *Session) syncHead(ctx context.Context, hs headState) error {
	old := s.hs.Segments
	if hs.etag == s.hs.etag && hs.Version == s.hs.Version {
		return nil
	}
	if len(hs.Segments) < len(old) || !slices.Equal(hs.Segments[:len(old)], old) {
		return s.load(ctx)
	}
	for _, rel := range hs.Segments[len(old):] {
		if err := s.readInto(ctx, s.prefix+rel); err != nil {
			return err
		}
	}
	s.hs, s.leaf = hs, hs.Head
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
	infos, err := r.store.ListSegments(ctx, s.ref)
	if err != nil {
		return 0, fmt.Errorf("collect session %q: %w", id, err)
	}
	hs, ok, err := r.readHead(ctx, s.headKey())
	if err != nil {
		return 0, fmt.Errorf("collect session %q: %w", id, err)
	}
	if !ok {
		if len(infos) == 0 {
			return 0, notFound(id)
		}
		return 0, nil
	}
	cutoff := r.now().Add(-olderThan)
	deleted := 0
	for _, info := range infos {
		if hs.names(s.relName(info.Key)) || info.Time.After(cutoff) {
			continue
		}
		if err := r.bucket.Delete(ctx, info.Key); err != nil {
			return deleted, fmt.Errorf("collect session %q: %w", id, err)
		}
		deleted++
	}
	return deleted, nil
}
