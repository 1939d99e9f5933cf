package repository

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// ForkOptions are the fields of a fork.
type ForkOptions struct {
	// ID is the new session's id; empty means a new random UUID. An id that
	// exists gives an error wrapping bucket.ErrExists.
	ID string
	// At is the entry the fork ends at: the new session holds the path from the
	// root to it. Empty makes an empty fork: the header alone, still naming the
	// source as parentSession (Pi forks so before the first user message).
	At string
	// Whole copies every entry of the source, every branch, in sequence order
	// (Pi's fork without an entry); At is then ignored.
	Whole bool
	// Cwd is recorded in the new session's header; empty means the source's.
	Cwd string
}

// EntryNotFoundError is a fork at an entry that the source session does not
// hold (or that cannot be on a path: a "leaf" entry). It wraps bucket.ErrNotFound.
type EntryNotFoundError struct {
	Session, Entry string
}

func (e *EntryNotFoundError) Error() string {
	return fmt.Sprintf("session %q: entry %q: %v", e.Session, e.Entry, bucket.ErrNotFound)
}

// Unwrap returns bucket.ErrNotFound.
func (e *EntryNotFoundError) Unwrap() error { return bucket.ErrNotFound }

// Fork creates a new session whose history is the path from the root to entry
// atEntryID of session id (byte-for-byte; "" for an empty fork), with
// parentSession set to id in its header. The fork is strict if the source is. It
// returns the new session. See ForkSession.
//
// Fork reads the source once, as stored (transcript.Store.Stored): no payload
// object is fetched, and the fork's segment copies the references the source's
// segments hold (relying on one look at the namespace's payload deletion marks
// taken before the read: transcript.CheckPayloads), so a fork costs the same
// requests however many large payloads the path holds. When the path holds a
// payload stored outside its segment, the handle returned holds the new
// session's header, mode and head, and reads its entries (payloads included) on
// its first read (Entries, Refresh, an append), so Page and Snapshot show no
// entry before that; otherwise it holds the entries, as Open would.
func (r *Repository) Fork(ctx context.Context, id, atEntryID string) (*Session, error) {
	src, err := r.newSession(id)
	if err != nil {
		return nil, err
	}
	chk, err := r.store.CheckPayloads(ctx, r.ns) // before the read: see transcript's payload_check.go
	if err != nil {
		return nil, fmt.Errorf("fork session %q: %w", id, err)
	}
	src.infoOnly, src.refs = true, map[string][]transcript.PayloadRef{}
	if err := src.load(ctx); err != nil {
		return nil, err
	}
	path, ok := src.entries, true
	if atEntryID == "" {
		path = nil
	} else {
		path, ok = pi.PathToRoot(src.entries, pi.NewIndex(src.entries), atEntryID)
	}
	if !ok {
		return nil, fmt.Errorf("fork: %w", &EntryNotFoundError{Session: id, Entry: atEntryID})
	}
	var sp *storedPath
	if len(path) > 0 {
		sp = &storedPath{raws: rawsOf(path), refs: make([][]transcript.PayloadRef, len(path)), check: &chk}
		for i, e := range path {
			sp.refs[i] = src.refs[e.ID()]
		}
	}
	fork, err := r.forkAs(ctx, src, ForkOptions{}, path, sp)
	if err != nil {
		return nil, err
	}
	if sp != nil && slices.ContainsFunc(sp.refs, func(refs []transcript.PayloadRef) bool { return len(refs) > 0 }) {
		fork.forget() // it holds references in place of payloads: read them as written first
	}
	return fork, nil
}

// ForkSession forks src as its handle holds it (Refresh it first to fork what
// the store holds): the new session, in this repository, holds the path from the
// root to opts.At byte-for-byte (or nothing, or every entry), its header names
// src as parentSession, and it is strict if src is. src must be a session of
// this repository's owner (a handle of another Repository of the same owner will
// do). An entry src does not hold gives an *EntryNotFoundError.
//
// Large payloads are not copied: the fork's segment keeps the references the
// path's entries were stored with, so that no payload is read, hashed or stored
// again. The handle knows them for the entries it read or wrote itself
// (heldForms): the fork then reads nothing of src but one listing of its
// segments, which must still hold the segments those entries came from (else,
// after a compaction say, src's segments are read as stored: storedForms).
func (r *Repository) ForkSession(ctx context.Context, src *Session, opts ForkOptions) (*Session, error) {
	src.mu.Lock()
	var path []pi.Entry
	ok := true
	switch {
	case opts.Whole:
		path = slices.Clone(src.entries)
	case opts.At != "":
		path, ok = pi.PathToRoot(src.entries, pi.NewIndex(src.entries), opts.At)
	}
	var held []heldRefs
	if ok {
		held = src.heldForms(path)
	}
	src.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("fork: %w", &EntryNotFoundError{Session: src.id, Entry: opts.At})
	}
	var stored *storedPath
	var err error
	switch {
	case held == nil: // the handle does not know: read the source
		stored, err = r.storedForms(ctx, src.ref, path)
	case noneHeld(held): // nothing to copy: the entries are written as they are
	default:
		if stored, err = r.heldStoredForms(ctx, src.ref, path, held); err == nil && stored == nil {
			stored, err = r.storedForms(ctx, src.ref, path)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("fork session %q: %w", src.id, err)
	}
	return r.forkAs(ctx, src, opts, path, stored)
}

// heldForms returns, for each entry of path (entries of s), the references it
// was stored with as s knows them (a zero heldRefs: stored whole), or nil when
// s does not know them: s holds its entries as stored (infoOnly). The caller
// holds s.mu.
func (s *Session) heldForms(path []pi.Entry) []heldRefs {
	if s.infoOnly || len(path) == 0 {
		return nil
	}
	out := make([]heldRefs, len(path))
	for i, e := range path {
		out[i] = s.held[e.ID()]
	}
	return out
}

// noneHeld reports whether none of the entries held describes (heldForms) was
// stored with a reference: the fork then writes them as they are.
func noneHeld(held []heldRefs) bool {
	return !slices.ContainsFunc(held, func(h heldRefs) bool { return len(h.refs) > 0 })
}

// heldStoredForms returns the entries path of session ref as stored, built from
// their bytes as written and the references held[i] they were stored with
// (transcript.StoredForm), with the look at the payload marks a copy of them
// relies on (see transcript's payload_check.go). That look must come before a
// read of the segments that hold the references; the handle read them before
// it, so a listing of ref taken after the look stands in for that read: a
// segment still listed then was there all along (segments are immutable and
// their keys never reused), and holds the references it held when read. It
// returns nil (the caller reads the segments) when a segment is no longer
// listed, or when a held reference does not fit its entry.
func (r *Repository) heldStoredForms(ctx context.Context, ref transcript.TranscriptRef, path []pi.Entry, held []heldRefs) (*storedPath, error) {
	chk, err := r.store.CheckPayloads(ctx, ref.Namespace)
	if err != nil {
		return nil, err
	}
	infos, err := r.store.ListSegments(ctx, ref)
	if err != nil {
		return nil, err
	}
	listed := make(map[string]bool, len(infos))
	for _, in := range infos {
		listed[in.Key] = true
	}
	sp := &storedPath{raws: rawsOf(path), refs: make([][]transcript.PayloadRef, len(path)), check: &chk}
	for i, h := range held {
		if len(h.refs) == 0 {
			continue
		}
		raw, ok := transcript.StoredForm(sp.raws[i], h.refs)
		if !ok || !listed[h.segment] {
			return nil, nil
		}
		sp.raws[i], sp.refs[i] = raw, h.refs
	}
	return sp, nil
}

// forkAs creates the fork of src (its id, cwd and mode taken from src unless
// opts sets them) holding path, as stored when stored is not nil.
func (r *Repository) forkAs(ctx context.Context, src *Session, opts ForkOptions, path []pi.Entry, stored *storedPath) (*Session, error) {
	src.mu.Lock()
	cwd, strict := src.header.Cwd(), src.strict
	src.mu.Unlock()
	if opts.ID == "" {
		id, err := uuid.NewRandomFromReader(r.cfg.Rand)
		if err != nil {
			return nil, fmt.Errorf("fork session %q: %w", src.id, err)
		}
		opts.ID = id.String()
	}
	if opts.Cwd != "" {
		if err := ValidateCwd(opts.Cwd); err != nil {
			return nil, err
		}
		cwd = opts.Cwd
	}
	return r.create(ctx, CreateOptions{ID: opts.ID, Cwd: cwd, Strict: strict}, src.id, path, stored)
}

// storedPath is a fork's entries as stored: raws[i] with payload references
// refs[i] in place of its payloads.
type storedPath struct {
	raws [][]byte
	refs [][]transcript.PayloadRef
	// check is the look at the namespace's payload marks taken before the read
	// that returned raws (transcript.Store.CheckPayloads).
	check *transcript.PayloadCheck
}

// storedForms returns the entries path (as written, a handle's) of session ref
// as the store holds them, with their payload references, or nil when none of
// them is long enough to hold a payload or none holds one. It reads ref's
// segments as stored (no payload) and takes an entry's stored form only where it
// is the only version of the entry the store holds (none lost a conflict) and
// has the shape of the handle's bytes (transcript.SameShape); any other entry is
// written as the handle holds it, its payloads taken out again by the writer.
func (r *Repository) storedForms(ctx context.Context, ref transcript.TranscriptRef, path []pi.Entry) (*storedPath, error) {
	t := r.store.PayloadThreshold()
	if t == 0 || !slices.ContainsFunc(path, func(e pi.Entry) bool { return len(e.Raw()) >= t }) {
		return nil, nil
	}
	chk, err := r.store.CheckPayloads(ctx, ref.Namespace) // before the read: see transcript's payload_check.go
	if err != nil {
		return nil, err
	}
	res, err := r.store.Stored().ReadAll(ctx, ref)
	if errors.Is(err, bucket.ErrNotFound) {
		return nil, nil // deleted since the handle read it: fork the handle's bytes
	}
	if err != nil {
		return nil, err
	}
	conflicts := map[string]bool{}
	for _, e := range res.Losers {
		conflicts[e.ID] = true
	}
	byID := make(map[string]transcript.Entry, len(res.Entries))
	for _, e := range res.Entries {
		if len(e.Refs) > 0 && !conflicts[e.ID] {
			byID[e.ID] = e
		}
	}
	sp := &storedPath{raws: rawsOf(path), refs: make([][]transcript.PayloadRef, len(path)), check: &chk}
	found := false
	for i, raw := range sp.raws {
		if len(raw) < t {
			continue
		}
		if e, ok := byID[path[i].ID()]; ok && transcript.SameShape(raw, e.Raw, e.Refs) {
			sp.raws[i], sp.refs[i], found = e.Raw, e.Refs, true
		}
	}
	if !found {
		return nil, nil
	}
	return sp, nil
}

// forget empties the cache of a handle that holds its entries as stored (a
// fork's, written from a stored read), so that its first read loads them as
// written; its header, mode and head stay.
func (s *Session) forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries, s.byID, s.waiting, s.odd, s.unindexed, s.held = nil, nil, nil, nil, false, nil
	s.have, s.frontier = transcript.SegmentSet{}, transcript.Origin{}
	s.stale = true
	s.heldBytes.Store(0)
}
