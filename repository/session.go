package repository

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// Session is one opened session of a Repository. It caches what it has read
// (entry ids and bytes, the segments it has seen, the committed head) so that an
// append reads only what is new. A Session is safe for concurrent use; its
// appends are serialised.
type Session struct {
	repo   *Repository
	id     string
	ref    transcript.TranscriptRef
	prefix string    // key prefix of the session's objects
	asOf   time.Time // zero: live; else a read-only view as of this time
	// infoOnly: loaded only for its metadata (List): entries as stored, their
	// large payloads left in the store (transcript.Store.Stored).
	infoOnly bool

	mu     sync.Mutex
	strict bool
	header pi.Header
	// entries are the entries in sequence order (see Page): commit order in
	// strict mode, merge order otherwise; new ones are appended.
	entries []pi.Entry
	byID    map[string][]byte // every known entry (and header) id → raw bytes
	seen    map[string]bool   // default mode: segment keys read
	updated time.Time         // newest segment time seen
	leaf    string            // active leaf (strict: committed head) as of the last read
	name    string            // the latest session name among entries
	hs      transcript.Head   // strict: the committed head as last read or written
	broken  error             // strict: why appends are refused (ErrHeadMismatch)
	// Default mode, for Refresh: the segments held (ReadNew), the latest origin
	// of an entry held (an entry of a later origin extends the merge order at its
	// end) and when the session was last listed whole.
	have   transcript.SegmentSet
	last   transcript.Origin
	fullAt time.Time
	// epoch counts the reads after which the sequence is not an extension of
	// the one before (see Page).
	epoch uint64
}

// ID returns the session id.
func (s *Session) ID() string { return s.id }

// Ref returns the session's transcript reference (the owner's namespace, the
// repository's agent id, the session id).
func (s *Session) Ref() transcript.TranscriptRef { return s.ref }

// Strict reports whether the session is in strict mode (it has a head object).
func (s *Session) Strict() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.strict
}

// Header returns the session header (the zero Header if the store holds none).
func (s *Session) Header() pi.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.header
}

// Head returns the active leaf as this handle last saw it: in strict mode the
// committed head entry, otherwise the last entry in merge order (or a leaf entry's
// target). "" means none.
func (s *Session) Head() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leaf
}

// Err returns why the session refuses appends (an error wrapping ErrHeadMismatch),
// or nil.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.broken
}

// notFound is the one error a missing or foreign session gives.
func notFound(id string) error {
	return fmt.Errorf("session %q: %w", id, bucket.ErrNotFound)
}

// load reads the session afresh: its head (if strict) and every visible segment.
// The caller holds s.mu (or owns s exclusively).
func (s *Session) load(ctx context.Context) error {
	r := s.repo
	hs, err := r.store.ReadHead(ctx, s.ref)
	strict := err == nil
	if err != nil && !errors.Is(err, bucket.ErrNotFound) {
		return fmt.Errorf("open session %q: %w", s.id, headError(err))
	}
	res, err := s.view(hs, strict).ReadAll(ctx, s.ref)
	if errors.Is(err, bucket.ErrNotFound) && strict && s.asOf.IsZero() {
		// The head exists but commits nothing readable: the session is damaged
		// (checkHead says so), not gone.
		res, err = &transcript.MergeResult{}, nil
	}
	if errors.Is(err, bucket.ErrNotFound) {
		return notFound(s.id)
	}
	if err != nil {
		return fmt.Errorf("open session %q: %w", s.id, err)
	}
	prev := s.entries
	s.strict, s.hs, s.broken = strict, hs, nil
	s.header, s.entries = pi.Header{}, nil
	s.byID, s.seen, s.updated = map[string][]byte{}, map[string]bool{}, time.Time{}
	s.last = transcript.Origin{}
	keys := make([]string, 0, len(res.Segments))
	for _, seg := range res.Segments {
		s.seen[seg.Key] = true
		s.updated = later(s.updated, seg.Time)
		keys = append(keys, seg.Key)
	}
	s.have, s.fullAt = transcript.NewSegmentSet(keys...), time.Time{}
	ordered := res.Entries
	if strict {
		ordered = hs.Replay(res.Entries) // commit order
	}
	for _, e := range ordered {
		s.byID[e.ID] = e.Raw
		if e.Origin.Compare(s.last) > 0 {
			s.last = e.Origin
		}
		se, h, isHeader, ok := parseStored(e.Raw)
		switch {
		case isHeader && s.header.IsZero():
			s.header = h
		case ok && !isHeader:
			s.entries = append(s.entries, se)
		}
	}
	s.leaf = pi.ActiveLeafID(s.entries)
	s.name = pi.SessionName(s.entries)
	if !extends(s.entries, prev) {
		s.epoch++
	}
	if strict {
		s.checkHead(res)
	}
	return nil
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

// view returns the store the session's reads go through: in strict mode it sees
// only the segments the head hs commits, as of a time only those created by then
// (transcript.Store.View).
func (s *Session) view(hs transcript.Head, strict bool) *transcript.Store {
	st := s.repo.store
	if s.infoOnly {
		st = st.Stored()
	}
	if strict {
		st = st.View(hs.Committed())
	}
	if asOf := s.asOf; !asOf.IsZero() {
		st = st.View(func(info transcript.SegmentInfo) bool { return !info.Time.After(asOf) })
	}
	return st
}

// checkHead compares the stored head with the head computed from the committed
// entries in commit order (s.leaf, as load computed it), and marks the session
// broken if they differ or a committed segment is missing. As of a time, the
// computed head is the head.
func (s *Session) checkHead(res *transcript.MergeResult) {
	computed := s.leaf
	if !s.asOf.IsZero() {
		return
	}
	switch {
	case len(res.Segments) != len(s.hs.Segments):
		s.broken = fmt.Errorf("session %q: %w: the head commits %d segments, %d are readable",
			s.id, ErrHeadMismatch, len(s.hs.Segments), len(res.Segments))
	case computed != s.hs.Entry:
		s.broken = fmt.Errorf("session %q: %w: stored head %q, computed %q",
			s.id, ErrHeadMismatch, s.hs.Entry, computed)
	}
}

// readCommitted reads one committed segment of a strict session and appends
// its entries that are new to the handle, in their order, at the end of the
// sequence (commit order).
func (s *Session) readCommitted(ctx context.Context, rel string) error {
	key := s.prefix + rel
	seg, err := s.repo.store.ReadSegment(ctx, key)
	if err != nil {
		return fmt.Errorf("session %q: %w", s.id, err)
	}
	if info, err := transcript.ParseKey(s.repo.store.Prefix(), key); err == nil {
		s.updated = later(s.updated, info.Time)
	}
	var fresh []pi.Entry
	for _, raw := range seg.Entries {
		if e, ok := s.addRaw(raw); ok {
			fresh = append(fresh, e)
		}
	}
	s.extend(fresh)
	return nil
}

// addRaw adds an entry (or the header) read from the store to the id cache
// unless its id is known; it returns the entry when it is a new one.
func (s *Session) addRaw(raw []byte) (pi.Entry, bool) {
	se, h, isHeader, ok := parseStored(raw)
	var id string
	switch {
	case isHeader:
		id = h.ID()
	case ok:
		id = se.ID()
	default: // neither: kept by id only, as the store keeps it
		e, err := transcript.ParseEntry(raw)
		if err != nil {
			return pi.Entry{}, false
		}
		id = e.ID
	}
	if _, known := s.byID[id]; known {
		return pi.Entry{}, false
	}
	s.byID[id] = raw
	if isHeader && s.header.IsZero() {
		s.header = h
	}
	return se, ok && !isHeader
}

// parseStored parses a line the store holds, once: a tree entry, or else the
// session header (isHeader); ok is false for a line that is neither. Entries
// are nearly every line, so they are tried first.
func parseStored(raw []byte) (e pi.Entry, h pi.Header, isHeader, ok bool) {
	if e, err := pi.ParseEntry(raw); err == nil {
		return e, pi.Header{}, false, true
	}
	if h, err := pi.ParseHeader(raw); err == nil {
		return pi.Entry{}, h, true, true
	}
	return pi.Entry{}, pi.Header{}, false, false
}

// extend appends entries new to the handle at the end of the sequence and
// keeps the name current. (The caller moves the head.)
func (s *Session) extend(fresh []pi.Entry) {
	s.entries = append(s.entries, fresh...)
	if n := pi.SessionName(fresh); n != "" {
		s.name = n
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Entries returns the session's entries (the header excluded) in merge order, read
// afresh; in strict mode only committed ones.
func (s *Session) Entries(ctx context.Context) ([]pi.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.reload(ctx); err != nil {
		return nil, err
	}
	return slices.Clone(s.entries), nil
}

// reload re-reads a live session; a session as of a time never changes.
func (s *Session) reload(ctx context.Context) error {
	if !s.asOf.IsZero() {
		return nil
	}
	return s.load(ctx)
}

// Context returns the model context at the active leaf (strict: the head).
func (s *Session) Context(ctx context.Context) (pi.Context, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.reload(ctx); err != nil {
		return pi.Context{}, err
	}
	if !s.strict {
		return pi.BuildContextFrom(s.entries, nil), nil
	}
	leaf := s.leaf // the committed head, which a leaf entry may have moved
	return pi.BuildContextFrom(s.entries, &leaf), nil
}

// Export writes the session as a Pi version 3 file: the header line, then every
// entry in merge order.
func (s *Session) Export(ctx context.Context, w io.Writer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.reload(ctx); err != nil {
		return err
	}
	if s.header.IsZero() {
		return fmt.Errorf("export session %q: %w: no session header stored", s.id, ErrInvalid)
	}
	return sessiontree.WriteSession(w, s.header, s.entries)
}

// Info returns the session's metadata, read afresh.
func (s *Session) Info(ctx context.Context) (SessionInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.reload(ctx); err != nil {
		return SessionInfo{}, err
	}
	return s.info(), nil
}

func (s *Session) info() SessionInfo {
	info := SessionInfo{
		ID:            s.id,
		Updated:       s.updated,
		Entries:       len(s.entries),
		Leaf:          s.leaf,
		Strict:        s.strict,
		ParentSession: s.header.ParentSession(),
		Cwd:           s.header.Cwd(),
		Name:          s.name,
	}
	if t, err := time.Parse(time.RFC3339Nano, s.header.Timestamp()); err == nil {
		info.Created = t
	}
	return info
}
