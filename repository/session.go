package repository

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/segment"
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

	mu      sync.Mutex
	strict  bool
	header  pi.Header
	entries []pi.Entry        // merge order, as of the last load
	byID    map[string][]byte // every known entry (and header) id → raw bytes
	seen    map[string]bool   // default mode: segment keys read
	updated time.Time         // newest segment time seen
	leaf    string            // active leaf (strict: committed head) as of the last load
	hs      headState         // strict: the committed head as last read or written
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
	return fmt.Errorf("session %q: %w", id, ErrNotFound)
}

// load reads the session afresh: its head (if strict) and every visible segment.
// The caller holds s.mu (or owns s exclusively).
func (s *Session) load(ctx context.Context) error {
	r := s.repo
	hs, strict, err := r.readHead(ctx, s.headKey())
	if err != nil {
		return fmt.Errorf("open session %q: %w", s.id, err)
	}
	keep := s.keepFunc(hs, strict)
	st, err := r.view(keep)
	if err != nil {
		return err
	}
	res, err := st.ReadAll(ctx, s.ref)
	if errors.Is(err, transcript.ErrNotFound) && strict && s.asOf.IsZero() {
		// The head exists but commits nothing readable: the session is damaged
		// (checkHead says so), not gone.
		res, err = &transcript.MergeResult{}, nil
	}
	if errors.Is(err, transcript.ErrNotFound) {
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

// keepFunc returns which segments the session's reads see: in strict mode only
// those the head commits; as of a time only those created by then.
func (s *Session) keepFunc(hs headState, strict bool) func(transcript.SegmentInfo) bool {
	if !strict && s.asOf.IsZero() {
		return nil
	}
	var committed map[string]bool
	if strict {
		committed = make(map[string]bool, len(hs.Segments))
		for _, k := range hs.Segments {
			committed[k] = true
		}
	}
	return func(info transcript.SegmentInfo) bool {
		if committed != nil && !committed[s.relName(info.Key)] {
			return false
		}
		return s.asOf.IsZero() || !info.Time.After(s.asOf)
	}
}

// checkHead compares the stored head with the head computed from the committed
// entries replayed in commit order, and marks the session broken if they differ
// or a committed segment is missing. As of a time, the computed head is the head.
func (s *Session) checkHead(res *transcript.MergeResult) {
	order := map[string]int{}
	for i, k := range s.hs.Segments {
		order[k] = i
	}
	replay := slices.Clone(res.Entries)
	slices.SortStableFunc(replay, func(a, b transcript.Entry) int {
		if c := order[s.relName(a.Segment)] - order[s.relName(b.Segment)]; c != 0 {
			return c
		}
		return a.Pos - b.Pos
	})
	var ordered []pi.Entry
	for _, e := range replay {
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
	case computed != s.hs.Head:
		s.broken = fmt.Errorf("session %q: %w: stored head %q, computed %q",
			s.id, ErrHeadMismatch, s.hs.Head, computed)
	}
}

// Append appends entries (each one JSON object with a string "type" and "id", not a
// "session" header) as one segment. It is idempotent by entry id: entries whose id
// exists with the same bytes are skipped (so a retry succeeds without writing), and
// an id that exists with other bytes fails the whole call with ErrConflict,
// writing nothing. Each parentId (and a leaf entry's targetId) must be null or name
// a known entry or an earlier one of the call.
//
// In strict mode Append is AppendIf with the head this handle last saw. In default
// mode concurrent appends from several writers all succeed and become sibling
// branches; two writers appending one id with different bytes at the same moment
// are both accepted and resolved by the store's merge (the first in merge order
// wins).
func (s *Session) Append(ctx context.Context, entries ...[]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.asOf.IsZero() {
		return fmt.Errorf("append to session %q: %w", s.id, ErrReadOnly)
	}
	if s.strict {
		return s.appendStrict(ctx, s.hs.Head, entries)
	}
	return s.appendDefault(ctx, entries)
}

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

func (s *Session) appendDefault(ctx context.Context, raws [][]byte) error {
	batch, err := parseBatch(raws)
	if err != nil {
		return fmt.Errorf("append to session %q: %w", s.id, err)
	}
	if err := s.refresh(ctx); err != nil {
		return err
	}
	fresh, err := s.fresh(batch)
	if err != nil || len(fresh) == 0 {
		return err
	}
	info, err := s.repo.store.AppendSegment(ctx, s.ref, rawsOf(fresh), s.repo.writer)
	if err != nil {
		return fmt.Errorf("append to session %q: %w", s.id, err)
	}
	s.seen[info.Key] = true
	s.added(fresh)
	return nil
}

func (s *Session) appendStrict(ctx context.Context, expected string, raws [][]byte) error {
	batch, err := parseBatch(raws)
	if err != nil {
		return fmt.Errorf("append to session %q: %w", s.id, err)
	}
	r := s.repo
	if _, ok := r.bucket.(bucket.Conditional); !ok {
		return fmt.Errorf("append to session %q: %w", s.id, ErrNotConditional)
	}
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

// refresh reads the segments of a default-mode session that this handle has not
// seen, adding their entries to the cache. A session without segments is gone.
func (s *Session) refresh(ctx context.Context) error {
	infos, err := s.repo.store.ListSegments(ctx, s.ref)
	if err != nil {
		return fmt.Errorf("session %q: %w", s.id, err)
	}
	if len(infos) == 0 {
		return notFound(s.id)
	}
	for _, info := range infos {
		if s.seen[info.Key] {
			continue
		}
		if err := s.readInto(ctx, info.Key); err != nil {
			return err
		}
		s.seen[info.Key] = true
		s.updated = later(s.updated, info.Time)
	}
	return nil
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

// readInto reads one segment into the id cache. A vanished segment (compacted and
// removed) is skipped: its entries live in the segment that replaced it.
func (s *Session) readInto(ctx context.Context, key string) error {
	seg, err := s.repo.store.ReadSegment(ctx, key)
	if errors.Is(err, transcript.ErrNotFound) && !s.strict {
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

// added records entries this handle committed; in default mode the last of them
// becomes the active leaf as this handle sees it.
func (s *Session) added(fresh []pi.Entry) {
	for _, e := range fresh {
		s.byID[e.ID()] = e.Raw()
	}
	if !s.strict {
		s.leaf = s.headAfter(s.leaf, fresh)
	}
	s.updated = later(s.updated, s.repo.now())
}

// parseBatch parses the entries of one append. The same id twice in one call is
// kept once if the bytes are equal and is a conflict otherwise.
func parseBatch(raws [][]byte) ([]pi.Entry, error) {
	if len(raws) == 0 {
		return nil, fmt.Errorf("%w: no entries", ErrInvalid)
	}
	out := make([]pi.Entry, 0, len(raws))
	seen := map[string][]byte{}
	for i, raw := range raws {
		if err := segment.CheckEntrySize(len(raw)); err != nil {
			return nil, fmt.Errorf("%w: entry %d: %w", ErrInvalid, i, err)
		}
		e, err := pi.ParseEntry(bytes.Clone(raw))
		if err != nil {
			return nil, fmt.Errorf("%w: entry %d: %w", ErrInvalid, i, err)
		}
		if prev, ok := seen[e.ID()]; ok {
			if !bytes.Equal(prev, e.Raw()) {
				return nil, fmt.Errorf("%w: entry %d: id %q twice with other bytes", ErrConflict, i, e.ID())
			}
			continue
		}
		seen[e.ID()] = e.Raw()
		out = append(out, e)
	}
	return out, nil
}

// fresh returns the entries of batch that are not yet stored, after checking that
// none conflicts with a stored one and that every parent (and leaf target) is
// known or earlier in the batch.
func (s *Session) fresh(batch []pi.Entry) ([]pi.Entry, error) {
	var out []pi.Entry
	for _, e := range batch {
		stored, ok := s.byID[e.ID()]
		if !ok {
			out = append(out, e)
			continue
		}
		if !bytes.Equal(stored, e.Raw()) {
			return nil, fmt.Errorf("append to session %q: %w: entry %q exists with other bytes", s.id, ErrConflict, e.ID())
		}
	}
	inBatch := map[string]bool{}
	for _, e := range out {
		refs := []string{}
		if p, ok := e.ParentID(); ok {
			refs = append(refs, p)
		}
		if e.Type() == pi.TypeLeaf {
			if t, ok := e.StringField("targetId"); ok {
				refs = append(refs, t)
			}
		}
		for _, id := range refs {
			if _, known := s.byID[id]; !known && !inBatch[id] {
				return nil, fmt.Errorf("append to session %q: %w: entry %q refers to unknown entry %q",
					s.id, ErrInvalid, e.ID(), id)
			}
		}
		inBatch[e.ID()] = true
	}
	return out, nil
}

func rawsOf(entries []pi.Entry) [][]byte {
	out := make([][]byte, len(entries))
	for i, e := range entries {
		out[i] = e.Raw()
	}
	return out
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
