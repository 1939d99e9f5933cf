package repository

import (
	"bytes"
	"context"
	"fmt"

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
	if s.strict {
		return s.appendStrict(ctx, s.hs.Entry, entries)
	}
	return s.appendDefault(ctx, entries)
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
				return nil, fmt.Errorf("entry %d: %w", i, &EntryError{EntryID: e.ID(), Twice: true, Err: transcript.ErrConflict})
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
			return nil, fmt.Errorf("append to session %q: %w", s.id, &EntryError{EntryID: e.ID(), Err: transcript.ErrConflict})
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
				return nil, fmt.Errorf("append to session %q: %w", s.id, &EntryError{EntryID: e.ID(), RefersTo: id, Err: ErrInvalid})
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
