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

// RefreshListing is how long a default-mode session's Refresh lists only the
// newest keys (transcript.Store.ReadNew) before it lists the session whole
// again, so that a segment that lands late with an old key, or the deletion of
// the session by another process, shows within this time.
const RefreshListing = 5 * time.Second

// Refresh brings the handle up to date with the store, reading only what is
// new: in strict mode it reads the head object (one GET) and the segments the
// head names that the handle lacks (a compacted segment whose inputs it holds is
// not read); in default mode it lists the newest keys of the session (one LIST;
// the whole session every RefreshListing) and reads the segments it does not
// hold (transcript.Store.ReadNew). New entries extend the sequence (see Page);
// when they do not (a default-mode segment whose entries sort before ones the
// handle holds, a session deleted and created again) the handle reads the
// session whole and its Epoch changes. A session that is gone gives an error
// wrapping bucket.ErrNotFound. A session as of a time never changes.
func (s *Session) Refresh(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reload(ctx)
}

// reload brings a live session up to date with the store, reading only what is
// new; a session as of a time never changes. The caller holds s.mu.
func (s *Session) reload(ctx context.Context) error {
	switch {
	case !s.asOf.IsZero():
		return nil
	case s.stale || (s.byID == nil && !s.unindexed):
		return s.load(ctx)
	case s.strict:
		hs, err := s.repo.store.ReadHeadSince(ctx, s.ref, s.hs)
		if errors.Is(err, bucket.ErrNotFound) {
			return s.load(ctx) // gone, or created again without a head
		}
		if err != nil {
			return fmt.Errorf("session %q: %w", s.id, headError(err))
		}
		return s.syncHead(ctx, hs)
	}
	return s.catchUp(ctx, false)
}

// catchUp reads what a default-mode session holds beyond the handle's segments,
// listing the session whole when full is set or RefreshListing has passed (or
// when an incremental listing shows nothing: the session may be gone, which
// only a full listing tells).
func (s *Session) catchUp(ctx context.Context, full bool) error {
	have, now := s.have, time.Now()
	// A session of one segment is listed whole every time (as cheap as listing
	// what is new): it may be a strict create caught between its first segment
	// and its head (see load), whose whole listing shows the head once written.
	if full || now.Sub(s.fullAt) >= RefreshListing || have.Len() <= 1 {
		have = have.Reconcile()
	}
	inc, err := s.repo.store.ReadNew(ctx, s.ref, have)
	if err == nil && !inc.Full && inc.Listed == 0 {
		// An incremental listing shows the newest level-0 segment held, or the
		// compacted segment that replaced it: showing nothing, the session may
		// be gone.
		inc, err = s.repo.store.ReadNew(ctx, s.ref, s.have.Reconcile())
	}
	if errors.Is(err, bucket.ErrNotFound) {
		return notFound(s.id)
	}
	if err != nil {
		return fmt.Errorf("session %q: %w", s.id, err)
	}
	if inc.HeadListed {
		// Loaded while a strict create was between its first segment and its
		// head (see load), the handle took the session for a default-mode one;
		// a whole listing (every append's, and one every RefreshListing) shows
		// the head: the session is read again as strict, before an append
		// writes a segment that no head would ever commit.
		return s.load(ctx)
	}
	if inc.Full {
		// A segment the handle holds that is no longer listed is a
		// compaction's input collected after its delay (a compacted segment
		// listed names it), or gone with the session: deleted, what the
		// listing shows now, if anything, is what appends in flight wrote,
		// without the header (no session). Then the session is read afresh:
		// load says it is gone, and a handle whose session is gone reads it
		// afresh again next time. A collection costs a ranged GET of each
		// compacted segment's metadata, not a read of the session.
		collected, err := s.repo.store.Collected(ctx, s.ref, s.have, inc.Have)
		if err != nil {
			return fmt.Errorf("session %q: %w", s.id, err)
		}
		if !collected {
			err := s.load(ctx)
			if errors.Is(err, bucket.ErrNotFound) {
				s.stale = true
			}
			return err
		}
	}
	if inc.Full {
		s.fullAt = now
	}
	if !s.fits(inc.Entries) {
		return s.load(ctx)
	}
	fresh := s.newIn(inc.Entries)
	s.add(fresh)
	s.have = inc.Have
	s.leaf = s.headAfter(s.leaf, parsed(fresh))
	return nil
}

// syncHead brings the cache of a strict session to the committed head hs: it
// reads the segments hs names that the handle lacks (nothing when hs is the head
// it holds, or a compaction of what it holds) and appends their new entries in
// commit order. It reads everything afresh when the head names a missing
// segment, an entry held comes back with other bytes, or the head does not
// follow from the entries (load then marks the session broken).
func (s *Session) syncHead(ctx context.Context, hs transcript.Head) error {
	if hs.Same(s.hs) {
		return nil
	}
	hs, inc, err := s.repo.store.ReadCommitted(ctx, s.ref, hs, s.have)
	if errors.Is(err, bucket.ErrNotFound) {
		return notFound(s.id)
	}
	if err != nil {
		return fmt.Errorf("session %q: %w", s.id, headError(err))
	}
	if len(inc.Missing) > 0 || !s.fits(inc.Entries) || s.broken != nil {
		return s.load(ctx)
	}
	fresh := commitOrder(hs, s.prefix, s.newIn(inc.Entries), inc.Via)
	if s.headAfter(s.leaf, parsed(fresh)) != hs.Entry {
		return s.load(ctx) // checkHead tells what is wrong
	}
	s.add(fresh)
	s.hs, s.have, s.leaf = hs, inc.Have, hs.Entry
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
// every server alike, and a compaction does not change it), in default mode the
// merge order (which a segment landing with an older key, from a writer that had
// not seen the newest entries, can reorder: the handle's Epoch then changes, and
// sequence numbers read before name other entries). The entries returned must
// not be changed.
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
