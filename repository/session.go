package repository

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
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
	// heldBytes is about the memory the entries held take (HeldBytes).
	heldBytes atomic.Int64

	repo   *Repository
	id     string
	ref    transcript.TranscriptRef
	prefix string    // key prefix of the session's objects
	asOf   time.Time // zero: live; else a read-only view as of this time
	// infoOnly: loaded only for its metadata (List): entries as stored, their
	// large payloads left in the store (transcript.Store.Stored).
	infoOnly bool
	// refs, when not nil, records the payload references of the entries an
	// infoOnly load holds, by id (a fork copies them: Repository.Fork).
	refs map[string][]transcript.PayloadRef
	// held records, by id, where each entry the handle holds with its payloads
	// put back was stored with references, and which (transcript.Entry.Resolved,
	// or a write's SegmentInfo.Refs): a fork copies those references without
	// reading the session again (ForkSession). An entry not in it is stored
	// whole. Guarded by mu.
	held map[string]heldRefs

	mu     sync.Mutex
	strict bool
	header pi.Header
	// entries are the entries in sequence order (see Page): commit order in
	// strict mode, merge order otherwise; new ones are appended.
	entries []pi.Entry
	// byID maps every known entry (and header) id to its raw bytes; read it
	// through index. A load leaves it (and waiting) to be built when first
	// needed (unindexed): a handle that only serves pages never needs it.
	byID      map[string][]byte
	unindexed bool
	odd       []transcript.Entry    // unindexed: the lines held that are neither entries nor the header
	have      transcript.SegmentSet // the segments held (strict: those hs names)
	frontier  transcript.Origin     // the greatest origin of an entry held
	waiting   map[string]bool       // parents that entries held name and the cache lacks
	stale     bool                  // the cache may be out of sequence order: load afresh
	updated   time.Time             // the newest origin time of an entry held
	leaf      string                // active leaf (strict: committed head)
	name      string                // the latest session name among entries
	hs        transcript.Head       // strict: the committed head as last read or written
	broken    error                 // strict: why appends are refused (ErrHeadMismatch)
	// fullAt is when a default-mode session was last listed whole (see
	// RefreshListing).
	fullAt time.Time
	// epoch counts the reads after which the sequence is not an extension of
	// the one before (see Page).
	epoch uint64
}

// heldRefs is where an entry was stored with payload references (the key of
// its segment) and the references (offsets in the stored entry).
type heldRefs struct {
	segment string
	refs    []transcript.PayloadRef
}

// heldEntryOverhead is what HeldBytes counts for each entry held beside its
// bytes: the parsed entry and its index slot.
const heldEntryOverhead = 256

// HeldBytes returns about how much memory the entries the handle holds take:
// their bytes and a fixed overhead each. It takes no lock, so a cache of
// handles may ask while another goroutine uses the handle.
func (s *Session) HeldBytes() int64 { return s.heldBytes.Load() }

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
