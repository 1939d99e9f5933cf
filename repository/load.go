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

// A Session caches what it has read: every entry in merge order, the segments
// it holds them from, and (strict mode) the head it read. Reading the session
// again costs what is new: in strict mode one GET of the head, and the segments
// it names that the handle lacks; in default mode one listing of the session
// (transcript.Store.ReadNew) and the segments it lacks. An increment is added
// after the entries held when that is where a full read puts it (its entries
// originate after every entry held and none of them is the missing parent of an
// entry held); otherwise the session is read afresh.

// load reads the session afresh: its head (if strict) and every committed (or
// visible) segment. The caller holds s.mu (or owns s exclusively).
func (s *Session) load(ctx context.Context) error {
	hs, err := s.repo.store.ReadHead(ctx, s.ref)
	strict := err == nil
	if err != nil && !errors.Is(err, bucket.ErrNotFound) {
		return fmt.Errorf("open session %q: %w", s.id, headError(err))
	}
	var inc *transcript.Increment
	if strict {
		hs, inc, err = s.repo.store.ReadCommitted(ctx, s.ref, hs, transcript.SegmentSet{})
	} else {
		inc, err = s.view().ReadNew(ctx, s.ref, transcript.SegmentSet{})
	}
	if errors.Is(err, bucket.ErrNotFound) {
		return notFound(s.id)
	}
	if err != nil {
		return fmt.Errorf("open session %q: %w", s.id, headError(err))
	}
	entries := inc.Entries
	if strict && !s.asOf.IsZero() {
		entries = asOf(entries, s.asOf)
	}
	if len(entries) == 0 && (!strict || !s.asOf.IsZero()) {
		return notFound(s.id) // nothing by then (a strict head commits its first segment)
	}
	s.strict, s.hs, s.broken, s.stale = strict, hs, nil, false
	s.header, s.entries, s.have = pi.Header{}, nil, inc.Have
	s.byID, s.waiting = map[string][]byte{}, map[string]bool{}
	s.frontier, s.updated = transcript.Origin{}, time.Time{}
	s.add(entries)
	s.leaf = pi.ActiveLeafID(s.entries)
	if strict {
		s.checkHead(entries, inc.Missing)
	}
	return nil
}

// view returns the store a default-mode session's reads go through: as of a
// time, only the segments created by then (transcript.Store.View).
func (s *Session) view() *transcript.Store {
	st := s.repo.store
	if asOf := s.asOf; !asOf.IsZero() {
		st = st.View(func(info transcript.SegmentInfo) bool { return !info.Time.After(asOf) })
	}
	return st
}

// asOf returns the entries first stored at or before t (by their origin's key
// time): a strict session as it was then, compacted or not.
func asOf(entries []transcript.Entry, t time.Time) []transcript.Entry {
	var out []transcript.Entry
	for _, e := range entries {
		if !e.Origin.Time().After(t) {
			out = append(out, e)
		}
	}
	return out
}

// add appends entries (in merge order, after those held) to the cache.
func (s *Session) add(entries []transcript.Entry) {
	for _, e := range entries {
		if _, ok := s.byID[e.ID]; ok {
			continue
		}
		s.byID[e.ID] = e.Raw
		delete(s.waiting, e.ID)
		if e.Origin.Compare(s.frontier) > 0 {
			s.frontier = e.Origin
		}
		s.updated = later(s.updated, e.Origin.Time())
		if h, err := pi.ParseHeader(e.Raw); err == nil {
			if s.header.IsZero() {
				s.header = h
			}
			continue
		}
		se, err := pi.ParseEntry(e.Raw)
		if err != nil {
			continue
		}
		s.entries = append(s.entries, se)
		if p, ok := se.ParentID(); ok {
			if _, known := s.byID[p]; !known {
				s.waiting[p] = true
			}
		}
	}
}

// fits reports whether the increment's entries new to the cache go after those
// held in merge order: each originates after every entry held, none is the
// missing parent of an entry held, and no id held comes with other bytes.
func (s *Session) fits(entries []transcript.Entry) bool {
	for _, e := range entries {
		raw, held := s.byID[e.ID]
		switch {
		case held && string(raw) != string(e.Raw):
			return false
		case held:
		case s.waiting[e.ID], e.Origin.Compare(s.frontier) <= 0:
			return false
		}
	}
	return true
}

// newIn returns the entries that the cache lacks.
func (s *Session) newIn(entries []transcript.Entry) []transcript.Entry {
	var out []transcript.Entry
	for _, e := range entries {
		if _, ok := s.byID[e.ID]; !ok {
			out = append(out, e)
		}
	}
	return out
}

// reload brings a live session up to date with the store, reading only what is
// new (see above); a session as of a time never changes. The caller holds s.mu.
func (s *Session) reload(ctx context.Context) error {
	switch {
	case !s.asOf.IsZero():
		return nil
	case s.stale || s.byID == nil:
		return s.load(ctx)
	case s.strict:
		hs, err := s.repo.store.ReadHead(ctx, s.ref)
		if errors.Is(err, bucket.ErrNotFound) {
			return notFound(s.id)
		}
		if err != nil {
			return fmt.Errorf("session %q: %w", s.id, headError(err))
		}
		return s.syncHead(ctx, hs)
	}
	inc, err := s.repo.store.ReadNew(ctx, s.ref, s.have)
	if err == nil && !inc.Full && inc.Listed == 0 {
		// An incremental listing shows the newest level-0 segment held, or the
		// compacted segment that replaced it: showing nothing, the session may
		// be gone, which only a full listing tells.
		inc, err = s.repo.store.ReadNew(ctx, s.ref, s.have.Reconcile())
	}
	if errors.Is(err, bucket.ErrNotFound) {
		return notFound(s.id)
	}
	if err != nil {
		return fmt.Errorf("session %q: %w", s.id, err)
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
// it holds), and reads everything afresh when they do not go after what it
// holds, or when the head does not follow from the entries (then the session
// is marked broken).
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
	fresh := s.newIn(inc.Entries)
	if s.headAfter(s.leaf, parsed(hs.Replay(fresh))) != hs.Entry {
		return s.load(ctx) // checkHead tells what is wrong
	}
	s.add(fresh)
	s.hs, s.have, s.leaf = hs, inc.Have, hs.Entry
	return nil
}

// parsed returns the Pi entries among entries (the header and entries that do
// not parse left out).
func parsed(entries []transcript.Entry) []pi.Entry {
	var out []pi.Entry
	for _, e := range entries {
		if pe, err := pi.ParseEntry(e.Raw); err == nil {
			out = append(out, pe)
		}
	}
	return out
}

// checkHead compares the stored head with the head computed from the committed
// entries replayed in commit order, and marks the session broken if they differ
// or a committed segment is missing. As of a time, the computed head is the head.
func (s *Session) checkHead(entries []transcript.Entry, missing []string) {
	computed := pi.ActiveLeafID(parsed(s.hs.Replay(entries)))
	s.leaf = computed
	if !s.asOf.IsZero() {
		return
	}
	switch {
	case len(missing) > 0:
		s.broken = fmt.Errorf("session %q: %w: the head commits %d segments, %d are missing (%s, ...)",
			s.id, ErrHeadMismatch, len(s.hs.Segments), len(missing), missing[0])
	case computed != s.hs.Entry:
		s.broken = fmt.Errorf("session %q: %w: stored head %q, computed %q",
			s.id, ErrHeadMismatch, s.hs.Entry, computed)
	}
}
