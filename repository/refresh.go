package repository

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// RefreshListing is how long a default-mode session's Refresh lists only the
// newest keys (transcript.Store.ReadNew) before it lists the session whole
// again, so that a segment that lands late with an old key, or the deletion of
// the session by another process, shows within this time.
const RefreshListing = 5 * time.Second

// Refresh brings the handle up to date with the store, reading only what is
// new: in strict mode it reads the head object (one GET) and the segments
// committed since the head the handle knew; in default mode it lists the newest
// keys of the session (one LIST; the whole session every RefreshListing) and
// reads the segments it does not hold (transcript.Store.ReadNew). New entries
// extend the sequence (see Page); when they do not (a default-mode segment whose
// entries sort before ones the handle holds, a session deleted and created
// again) the handle reads the session whole and its Epoch changes. A session
// that is gone gives an error wrapping bucket.ErrNotFound. A session as of a time
// never changes.
func (s *Session) Refresh(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.asOf.IsZero() {
		return nil
	}
	if s.strict {
		return s.refreshStrict(ctx)
	}
	return s.catchUp(ctx, false)
}

// refreshStrict syncs a strict session with its head; a session whose head is
// gone is read again (it may have been created again without one).
func (s *Session) refreshStrict(ctx context.Context) error {
	hs, err := s.repo.store.ReadHead(ctx, s.ref)
	if errors.Is(err, bucket.ErrNotFound) {
		return s.load(ctx)
	}
	if err != nil {
		return fmt.Errorf("session %q: %w", s.id, headError(err))
	}
	return s.syncHead(ctx, hs)
}

// catchUp reads what a default-mode session holds beyond the handle's segments,
// listing the session whole when full is set or RefreshListing has passed.
func (s *Session) catchUp(ctx context.Context, full bool) error {
	have := s.have
	now := time.Now()
	if full || now.Sub(s.fullAt) >= RefreshListing {
		have = have.Reconcile()
	}
	inc, err := s.repo.store.ReadNew(ctx, s.ref, have)
	if errors.Is(err, bucket.ErrNotFound) {
		return notFound(s.id)
	}
	if err != nil {
		return fmt.Errorf("session %q: %w", s.id, err)
	}
	if inc.Full {
		s.fullAt = now
	}
	s.have = inc.Have
	for _, seg := range inc.Segments {
		s.seen[seg.Key] = true
		s.updated = later(s.updated, seg.Time)
	}
	var fresh []transcript.Entry
	for _, e := range inc.Entries {
		if raw, ok := s.byID[e.ID]; ok {
			if !bytes.Equal(raw, e.Raw) {
				return s.load(ctx) // another session under the same id, or a conflict to merge
			}
			continue
		}
		if e.Origin.Compare(s.last) < 0 {
			return s.load(ctx) // it sorts before entries the handle holds
		}
		fresh = append(fresh, e)
	}
	var added []pi.Entry
	for _, e := range fresh {
		if pe, ok := s.addRaw(e.Raw); ok {
			added = append(added, pe)
		}
		if e.Origin.Compare(s.last) > 0 {
			s.last = e.Origin
		}
	}
	s.extend(added)
	s.leaf = s.headAfter(s.leaf, added)
	return nil
}

// Page is a part of a session's sequence as a handle holds it.
type Page struct {
	// Entries are the entries with sequence numbers After+1 to After+len(Entries).
	Entries []pi.Entry
	// Count is the number of entries in the sequence.
	Count int
	// Head is the active leaf (strict: the committed head); "" for none.
	Head string
	// Epoch changes when the handle's sequence stops being an extension of the
	// one it held before (see Session.Page).
	Epoch uint64
}

// Page returns at most limit entries after sequence number after, as the handle
// holds them (no I/O; Refresh first to see what the store holds). An entry's
// sequence number is its place in the session's sequence, counted from 1: in
// strict mode the commit order (appends only ever extend it, on every handle and
// every server alike), in default mode the merge order (which a segment landing
// with an older key, from a writer that had not seen the newest entries, can
// reorder: the handle's Epoch then changes, and sequence numbers read before
// name other entries). The entries returned must not be changed.
func (s *Session) Page(after, limit int) Page {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.entries)
	lo := min(max(after, 0), n)
	hi := min(lo+max(limit, 0), n)
	return Page{Entries: s.entries[lo:hi:hi], Count: n, Head: s.leaf, Epoch: s.epoch}
}

// Snapshot returns the session's metadata as the handle holds it (no I/O).
func (s *Session) Snapshot() SessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info()
}
