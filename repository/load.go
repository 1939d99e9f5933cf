package repository

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// A Session caches what it has read: every entry in sequence order (commit
// order in strict mode, merge order otherwise), the segments it holds them
// from, and (strict mode) the head it read. Reading the session again costs what
// is new (refresh.go): in strict mode one GET of the head, and the segments it
// names that the handle lacks; in default mode one listing of the session
// (transcript.Store.ReadNew) and the segments it lacks. In strict mode an
// increment always goes after the entries held (commits only extend the commit
// order; a compaction changes the segments the head names, not its entries). In
// default mode it does when that is where a full read puts it (its entries
// originate after every entry held and none of them is the missing parent of an
// entry held); otherwise the session is read afresh and its epoch changes when
// the sequence is not an extension of the one before.

// load reads the session afresh: its head (if strict) and every committed (or
// visible) segment. The caller holds s.mu (or owns s exclusively).
func (s *Session) load(ctx context.Context) error {
	hs, err := s.repo.store.ReadHead(ctx, s.ref)
	strict := err == nil
	if err != nil && !errors.Is(err, bucket.ErrNotFound) {
		return fmt.Errorf("open session %q: %w", s.id, headError(err))
	}
	var inc *transcript.Increment
	if !strict {
		inc, err = s.view().ReadNew(ctx, s.ref, transcript.SegmentSet{})
		if err == nil && inc.HeadListed && s.asOf.IsZero() {
			// A strict create writes its first segment, then its head: the head
			// read above fell between the two (another request creating the
			// session, or a create that lost to another), the listing after it
			// did not. Read the session as what it is.
			hs, err = s.repo.store.ReadHead(ctx, s.ref)
			strict = err == nil
		}
	}
	if strict {
		hs, inc, err = s.store().ReadCommitted(ctx, s.ref, hs, transcript.SegmentSet{})
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
	if strict {
		entries = commitOrder(hs, s.prefix, entries, inc.Via)
	}
	if len(entries) == 0 && (!strict || !s.asOf.IsZero()) {
		return notFound(s.id) // nothing by then (a strict head commits its first segment)
	}
	if !strict && !holdsHeader(entries) {
		// Segments without the session's header are what appends racing the
		// session's deletion left behind (no writer starts a session without
		// its header): not a session, and appends must not bring it back.
		return notFound(s.id)
	}
	prev := s.entries
	s.strict, s.hs, s.broken, s.stale = strict, hs, nil, false
	s.header, s.entries, s.have = pi.Header{}, make([]pi.Entry, 0, len(entries)), inc.Have
	// The merge (and asOf, commitOrder) hand over each id once, so add need
	// not look ids up: the index is built when first needed.
	s.byID, s.waiting, s.odd, s.unindexed, s.held = nil, nil, nil, true, nil
	s.frontier, s.updated, s.name = transcript.Origin{}, time.Time{}, ""
	s.fullAt = time.Time{}
	s.heldBytes.Store(0)
	if !strict && inc.Full {
		s.fullAt = time.Now() // the session was just listed whole
	}
	s.add(entries)
	s.leaf = pi.ActiveLeafID(s.entries)
	if strict {
		s.checkHead(inc.Missing)
	}
	if !extends(s.entries, prev) {
		s.epoch++
	}
	return nil
}

// holdsHeader reports whether entries hold a session header. It is the first
// entry in merge order in every session a writer started, so the scan stops
// there; an entry of another type is not parsed.
func holdsHeader(entries []transcript.Entry) bool {
	for _, e := range entries {
		if e.Type != "" && e.Type != pi.TypeSession {
			continue
		}
		if _, err := pi.ParseHeader(e.Raw); err == nil {
			return true
		}
	}
	return false
}

// extends reports whether entries begin with prev, id for id: the sequence
// numbers prev gave stay those of the same entries.
func extends(entries, prev []pi.Entry) bool {
	if len(prev) > len(entries) {
		return false
	}
	for i, e := range prev {
		if entries[i].ID() != e.ID() {
			return false
		}
	}
	return true
}

// commitOrder returns entries of strict session (key prefix prefix) in commit
// order by its head h: by the place in h of the segment each was read from, then
// by origin (within one segment, its order). An entry read from a level-0 input
// of a compacted segment h names, in its place (transcript.Store.ReadCommitted,
// via: input to the compacted segment, relative to the session), takes the
// compacted segment's place: the head may name, before it, a compacted segment
// the reader read whole, whose commits are older. entries is the caller's to
// give: when it is in commit order already (the usual case) it is returned as
// it is.
func commitOrder(h transcript.Head, prefix string, entries []transcript.Entry, via map[string]string) []transcript.Entry {
	place := make(map[string]int, len(h.Segments))
	for i, rel := range h.Segments {
		place[rel] = i
	}
	// Each entry's rank, looked up once per run of entries from one segment.
	ranks := make([]int, len(entries))
	seg, rank := "", -1
	for i, e := range entries {
		if i == 0 || e.Segment != seg {
			seg, rank = e.Segment, -1
			rel := strings.TrimPrefix(seg, prefix)
			if out, ok := via[rel]; ok {
				rel = out
			}
			if r, ok := place[rel]; ok {
				rank = r
			}
		}
		ranks[i] = rank
	}
	cmp := func(i, j int) int {
		if c := ranks[i] - ranks[j]; c != 0 {
			return c
		}
		return entries[i].Origin.Compare(entries[j].Origin)
	}
	order := make([]int, len(entries))
	sorted := true
	for i := range order {
		order[i] = i
		sorted = sorted && (i == 0 || cmp(i-1, i) <= 0)
	}
	if sorted {
		return entries // as read: the usual case (the callers' slice is their own)
	}
	slices.SortStableFunc(order, cmp)
	out := make([]transcript.Entry, len(entries))
	for i, k := range order {
		out[i] = entries[k]
	}
	return out
}

// view returns the store a default-mode session's reads go through: as of a
// time, only the segments created by then (transcript.Store.View).
func (s *Session) view() *transcript.Store {
	st := s.store()
	if asOf := s.asOf; !asOf.IsZero() {
		st = st.View(func(info transcript.SegmentInfo) bool { return !info.Time.After(asOf) })
	}
	return st
}

// store returns the store the session's loads read from: entries as stored,
// their large payloads left in the bucket, for a handle loaded only for its
// metadata (infoOnly), else entries as written.
func (s *Session) store() *transcript.Store {
	if s.infoOnly {
		return s.repo.store.Stored()
	}
	return s.repo.store
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

// add appends entries (in merge order, after those held, each read from a
// verified segment or checked by an append) to the cache. A line is not
// scanned again when the read that returned it already read its type
// (entryOf); only a line that is not an entry (the header) is parsed as a
// header, and an origin's time is read once per segment. Into a handle a load
// just emptied (unindexed, nothing held) the ids come distinct, so add neither
// looks them up nor indexes them (see index); into any other it indexes first.
func (s *Session) add(entries []transcript.Entry) {
	lazy := s.unindexed && len(s.entries) == 0 && len(s.odd) == 0 && s.header.IsZero()
	if !lazy {
		s.index()
	}
	lastKey := ""
	for i := range entries {
		e := &entries[i] // not copied: an Entry is 180 bytes
		if !lazy {
			if _, ok := s.byID[e.ID]; ok {
				continue
			}
			s.byID[e.ID] = e.Raw
			if len(s.waiting) > 0 {
				delete(s.waiting, e.ID)
			}
		}
		if s.refs != nil && len(e.Refs) > 0 {
			s.refs[e.ID] = e.Refs
		}
		if len(e.Resolved) > 0 {
			if s.held == nil {
				s.held = map[string]heldRefs{}
			}
			s.held[e.ID] = heldRefs{segment: e.Segment, refs: e.Resolved}
		}
		if e.Origin.Compare(s.frontier) > 0 {
			s.frontier = e.Origin
		}
		if e.Origin.Key != lastKey || lastKey == "" {
			s.updated, lastKey = later(s.updated, e.Origin.Time()), e.Origin.Key
		}
		se, err := entryOf(e)
		if err != nil {
			if h, herr := pi.ParseHeader(e.Raw); herr == nil && s.header.IsZero() {
				s.header = h
			} else if lazy {
				s.odd = append(s.odd, transcript.Entry{ID: e.ID, Raw: e.Raw})
			}
			s.heldBytes.Add(int64(len(e.Raw)) + heldEntryOverhead)
			continue
		}
		s.entries = append(s.entries, se)
		s.heldBytes.Add(int64(len(e.Raw)) + heldEntryOverhead)
		if n := pi.SessionName([]pi.Entry{se}); n != "" {
			s.name = n
		}
		if p, ok := se.ParentID(); ok && !lazy {
			if _, known := s.byID[p]; !known {
				s.waiting[p] = true
			}
		}
	}
}

// index returns byID, first building it (and waiting) from what the handle
// holds when a load left it out: what add would have built entry by entry.
// The caller holds s.mu.
func (s *Session) index() map[string][]byte {
	if !s.unindexed {
		return s.byID
	}
	s.byID = make(map[string][]byte, len(s.entries)+len(s.odd)+1)
	if !s.header.IsZero() {
		s.byID[s.header.ID()] = s.header.Raw()
	}
	for _, o := range s.odd {
		s.byID[o.ID] = o.Raw
	}
	for _, e := range s.entries {
		s.byID[e.ID()] = e.Raw()
	}
	s.waiting = map[string]bool{}
	for _, e := range s.entries {
		if p, ok := e.ParentID(); ok {
			if _, known := s.byID[p]; !known {
				s.waiting[p] = true
			}
		}
	}
	s.odd, s.unindexed = nil, false
	return s.byID
}

// entryOf is the tree entry of e, read from a verified segment or checked by
// an append. When the read that returned e scanned it (e.Type is set), its
// links are taken as they are (pi.EntryOfLinks) and the rest of the line is
// read only when asked for: a handle serves most of its entries as bytes, and
// a second scan of each was most of the cost of opening a session. An entry
// taken from a segment's entry index is scanned here (pi.ScanEntry).
func entryOf(e *transcript.Entry) (pi.Entry, error) {
	if e.Type == "" {
		return pi.ScanEntry(e.Raw)
	}
	return pi.EntryOfLinks(e.Raw, pi.Links{ID: e.ID, ParentID: e.ParentID, Type: e.Type})
}

// fits reports whether the increment's entries new to the cache go after those
// held in sequence order: no id held comes with other bytes and, in default
// mode (merge order), each originates after every entry held and none is the
// missing parent of an entry held. In strict mode what a head commits after the
// entries held is after them in commit order.
func (s *Session) fits(entries []transcript.Entry) bool {
	byID := s.index()
	for _, e := range entries {
		raw, held := byID[e.ID]
		switch {
		case held && string(raw) != string(e.Raw):
			return false
		case held, s.strict:
		case s.waiting[e.ID], e.Origin.Compare(s.frontier) <= 0:
			return false
		}
	}
	return true
}

// newIn returns the entries that the cache lacks.
func (s *Session) newIn(entries []transcript.Entry) []transcript.Entry {
	var out []transcript.Entry
	byID := s.index()
	for _, e := range entries {
		if _, ok := byID[e.ID]; !ok {
			out = append(out, e)
		}
	}
	return out
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
// entries in commit order (s.leaf, as load computed it), and marks the session
// broken if they differ or a committed segment is missing. As of a time, the
// computed head is the head.
func (s *Session) checkHead(missing []string) {
	computed := s.leaf
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
