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

	mu      sync.Mutex
	strict  bool
	header  pi.Header
	entries []pi.Entry        // merge order, as of the last load
	byID    map[string][]byte // every known entry (and header) id → raw bytes
	seen    map[string]bool   // default mode: segment keys read
	updated time.Time         // newest segment time seen
	leaf    string            // active leaf (strict: committed head) as of the last load
	hs      transcript.Head   // strict: the committed head as last read or written
	broken  error             // strict: why appends are refused (ErrHeadMismatch)
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
	s.strict, s.hs, s.broken = strict, hs, nil
	s.header, s.entries = pi.Header{}, nil
	s.byID, s.seen, s.updated = map[string][]byte{}, map[string]bool{}, time.Time{}
	for _, seg := range res.Segments {
		s.seen[seg.Key] = true
		s.updated = later(s.updated, seg.Time)
	}
	for _, e := range res.Entries {
		s.byID[e.ID] = e.Raw
		if h, err := pi.ParseHeader(e.Raw); err == nil {
			if s.header.IsZero() {
				s.header = h
			}
			continue
		}
		if se, err := pi.ParseEntry(e.Raw); err == nil {
			s.entries = append(s.entries, se)
		}
	}
	s.leaf = pi.ActiveLeafID(s.entries)
	if strict {
		s.checkHead(res)
	}
	return nil
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
// entries replayed in commit order, and marks the session broken if they differ
// or a committed segment is missing. As of a time, the computed head is the head.
func (s *Session) checkHead(res *transcript.MergeResult) {
	var ordered []pi.Entry
	for _, e := range s.hs.Replay(res.Entries) {
		if se, err := pi.ParseEntry(e.Raw); err == nil {
			ordered = append(ordered, se)
		}
	}
	computed := pi.ActiveLeafID(ordered)
	s.leaf = computed
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

// readInto reads one segment into the id cache. A vanished segment (compacted and
// removed) is skipped: its entries live in the segment that replaced it.
func (s *Session) readInto(ctx context.Context, key string) error {
	seg, err := s.repo.store.ReadSegment(ctx, key)
	if errors.Is(err, bucket.ErrNotFound) && !s.strict {
		return nil
	}
	if err != nil {
		return fmt.Errorf("session %q: %w", s.id, err)
	}
	for _, raw := range seg.Entries {
		if e, err := transcript.ParseEntry(raw); err == nil {
			if _, ok := s.byID[e.ID]; !ok {
				s.byID[e.ID] = raw
			}
		}
	}
	return nil
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
	}
	if t, err := time.Parse(time.RFC3339Nano, s.header.Timestamp()); err == nil {
		info.Created = t
	}
	info.Name = pi.SessionName(s.entries)
	return info
}
