package repository

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
)

// Append appends entries (each one JSON object with a string "type" and "id", not a
// "session" header) as one segment. It is idempotent by entry id: entries whose id
// exists with the same bytes are skipped (so a retry succeeds without writing), and
// an id that exists with other bytes fails the whole call with transcript.ErrConflict,
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
	if !s.strict {
		if err := s.appendDefault(ctx, entries, false); !errors.Is(err, errBecameStrict) {
			return err
		}
	}
	return s.appendStrict(ctx, s.hs.Entry, entries, false)
}

// AppendOwned appends entries as AppendIf with expectedHead does in strict mode,
// and as Append does in default mode (where expectedHead is not used), for a
// caller that hands the entries over: the session keeps them as they are, without
// the copy Append and AppendIf make, so the caller must not modify them (nor the
// buffer they are slices of) afterwards, whatever the outcome. The checks, the
// errors and the entry index an EntryError names are those of Append and AppendIf.
func (s *Session) AppendOwned(ctx context.Context, expectedHead string, entries [][]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.asOf.IsZero() {
		return fmt.Errorf("append to session %q: %w", s.id, ErrReadOnly)
	}
	if !s.strict {
		if err := s.appendDefault(ctx, entries, true); !errors.Is(err, errBecameStrict) {
			return err
		}
	}
	return s.appendStrict(ctx, expectedHead, entries, true)
}

// errBecameStrict is appendDefault's answer when the whole listing it starts
// with showed a strict head (the handle was loaded while a strict create was
// between its first segment and its head, see load): the handle is strict now,
// and the append is to be made as a strict one, nothing written.
var errBecameStrict = errors.New("the session turned out to be strict")

// appendDefault is Append in default mode; owned: raws are handed over (see
// parseBatch).
func (s *Session) appendDefault(ctx context.Context, raws [][]byte, owned bool) error {
	batch, at, err := s.repo.parseBatch(raws, owned)
	if err != nil {
		return fmt.Errorf("append to session %q: %w", s.id, err)
	}
	// Idempotency rests on what the session holds: list it whole.
	if s.stale {
		err = s.load(ctx)
	} else {
		err = s.catchUp(ctx, true)
	}
	if err != nil {
		return err
	}
	if s.strict {
		return errBecameStrict
	}
	fresh, err := s.fresh(batch, at)
	if err != nil || len(fresh) == 0 {
		return err
	}
	info, err := s.repo.store.AppendParsed(ctx, s.ref, parsedOf(fresh), s.repo.writer)
	if err != nil {
		return fmt.Errorf("append to session %q: %w", s.id, err)
	}
	s.added(info, 0, fresh)
	s.leaf = s.headAfter(s.leaf, fresh)
	return nil
}

// added records entries this handle stored as the segment info, from its entry
// first on: they join the cache after the entries held (or, when a full read
// would not put them there, the next read loads the session afresh), with the
// payload references they were stored with (info.Refs).
func (s *Session) added(info transcript.SegmentInfo, first int, fresh []pi.Entry) {
	entries := make([]transcript.Entry, len(fresh))
	rel := transcript.Origin{Key: s.relKey(info.Key)}
	for i, e := range fresh {
		rel.Pos = first + i
		parent, _ := e.ParentID()
		entries[i] = transcript.Entry{ID: e.ID(), ParentID: parent, Type: e.Type(), Raw: e.Raw(), Segment: info.Key, Pos: rel.Pos, Origin: rel}
		entries[i].Resolved = info.EntryRefs(rel.Pos)
	}
	if !s.fits(entries) {
		s.stale = true
	}
	s.add(entries)
	s.have = s.have.With(info.Key)
}

// relKey returns the key of one of the session's segments relative to it.
func (s *Session) relKey(key string) string { return strings.TrimPrefix(key, s.prefix) }

// parseBatch checks and parses the entries of one append, the one place an
// append's entries are validated: each must fit the repository's entry limit
// (Config.MaxEntryBytes, at most the store's) and be a Pi entry (pi.ParseEntry,
// whose rule for id and parentId is the store's too). The same id twice in one
// call is kept once if the bytes are equal and is a conflict otherwise. at[k] is
// the position in raws of the k-th entry returned. A refused entry is an
// EntryError naming its position. The entries returned keep a copy of their
// bytes, or, when owned is set (the caller hands raws over), raws themselves.
func (r *Repository) parseBatch(raws [][]byte, owned bool) (batch []pi.Entry, at []int, err error) {
	if len(raws) == 0 {
		return nil, nil, fmt.Errorf("%w: no entries", ErrInvalid)
	}
	batch, at = make([]pi.Entry, 0, len(raws)), make([]int, 0, len(raws))
	seen := map[string][]byte{}
	for i, raw := range raws {
		if limit := r.cfg.MaxEntryBytes; len(raw) > limit {
			return nil, nil, &EntryError{Index: i, Err: fmt.Errorf("%w: entry of %d bytes exceeds the limit of %d bytes (%d MiB): %w",
				ErrInvalid, len(raw), limit, limit>>20, segment.ErrEntryTooLarge)}
		}
		if !owned {
			raw = bytes.Clone(raw)
		}
		e, err := pi.ParseEntry(raw)
		if err != nil {
			return nil, nil, &EntryError{Index: i, Err: fmt.Errorf("%w: %w", ErrInvalid, err)}
		}
		if prev, ok := seen[e.ID()]; ok {
			if !bytes.Equal(prev, e.Raw()) {
				return nil, nil, &EntryError{Index: i, EntryID: e.ID(), Twice: true, Err: transcript.ErrConflict}
			}
			continue
		}
		seen[e.ID()] = e.Raw()
		batch, at = append(batch, e), append(at, i)
	}
	return batch, at, nil
}

// fresh returns the entries of batch (at their positions at in the call) that
// are not yet stored, after checking that none conflicts with a stored one and
// that every parent (and leaf target) is known or earlier in the batch.
func (s *Session) fresh(batch []pi.Entry, at []int) ([]pi.Entry, error) {
	var out []pi.Entry
	var outAt []int
	byID := s.index()
	for k, e := range batch {
		stored, ok := byID[e.ID()]
		if !ok {
			out, outAt = append(out, e), append(outAt, at[k])
			continue
		}
		if !bytes.Equal(stored, e.Raw()) {
			return nil, fmt.Errorf("append to session %q: %w", s.id, &EntryError{Index: at[k], EntryID: e.ID(), Err: transcript.ErrConflict})
		}
	}
	inBatch := map[string]bool{}
	for k, e := range out {
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
			if _, known := byID[id]; !known && !inBatch[id] {
				return nil, fmt.Errorf("append to session %q: %w", s.id, &EntryError{Index: outAt[k], EntryID: e.ID(), RefersTo: id, Err: ErrInvalid})
			}
		}
		inBatch[e.ID()] = true
	}
	return out, nil
}

// parsedOf hands entries to the store with what parseBatch read of them, so
// that the store does not scan and validate them a second time.
func parsedOf(entries []pi.Entry) []transcript.ParsedEntry {
	out := make([]transcript.ParsedEntry, len(entries))
	for i, e := range entries {
		out[i] = transcript.ParsedEntry{Raw: e.Raw(), Links: e.Links()}
	}
	return out
}

func rawsOf(entries []pi.Entry) [][]byte {
	out := make([][]byte, len(entries))
	for i, e := range entries {
		out[i] = e.Raw()
	}
	return out
}
