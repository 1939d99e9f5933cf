package transcript

import (
	"context"
	"fmt"
)

// The one way a read returns entries. Segments hold payloads by reference
// (payload.go); the merge and the fetches work on entries as stored. Every read
// that returns entries to a caller (ReadAll, ReadNew, ReadLean, ReadCommitted,
// the Listed readers) returns them through readResolved, which puts the payloads
// back unless the store is Stored. A read path is written as a function giving
// its result as stored; the payloads are not its business, so a new one cannot
// forget them (TestReadPaths_ResolvePayloads reads through every one).

// asStored is a read's result holding entries as stored: the entries whose bytes
// hold payload references, and what to do once they are put back.
type asStored interface {
	// payloadItems returns the entries that hold references, each with where its
	// resolved bytes go.
	payloadItems() []resolveItem
	// payloadsResolved is called once every item's bytes are in place.
	payloadsResolved()
}

// readResolved runs read, a read of session ref, and puts the payloads back into
// the entries of its result (unless s is Stored: then they are returned as
// stored). An error of read is returned as is.
func readResolved[T asStored](ctx context.Context, s *Store, ref TranscriptRef, read func() (T, error)) (T, error) {
	res, err := read()
	if err != nil || s.stored {
		return res, err
	}
	if err := s.resolve(ctx, ref.Norm().Namespace, res.payloadItems()); err != nil {
		var zero T
		return zero, fmt.Errorf("read %s: %w", ref.Norm(), err)
	}
	res.payloadsResolved()
	return res, nil
}

// payloadItems returns the entries and losers of res that hold references.
func (res *MergeResult) payloadItems() []resolveItem {
	if res == nil {
		return nil
	}
	var items []resolveItem
	for _, es := range [][]Entry{res.Entries, res.Losers} {
		for i := range es {
			if e := &es[i]; len(e.Refs) > 0 {
				items = append(items, resolveItem{raw: e.Raw, refs: e.Refs, set: func(b []byte) { e.Raw, e.Refs, e.Resolved = b, nil, e.Refs }})
			}
		}
	}
	return items
}

// payloadsResolved: each item's set already dropped its references (keeping
// them as Entry.Resolved).
func (res *MergeResult) payloadsResolved() {}

// payloadItems returns the entries and losers of res that hold references.
func (res *LeanResult) payloadItems() []resolveItem {
	var items []resolveItem
	for i := range res.items {
		it := &res.items[i]
		if refs := res.entryRefs(it.seg, it.pos); len(refs) > 0 {
			body := res.bodies[it.seg]
			pos := it.pos
			items = append(items, resolveItem{raw: body[pos], refs: refs, set: func(b []byte) { body[pos] = b }})
		}
	}
	for i := range res.Losers {
		if e := &res.Losers[i]; len(e.Refs) > 0 {
			items = append(items, resolveItem{raw: e.Raw, refs: e.Refs, set: func(b []byte) { e.Raw, e.Refs = b, nil }})
		}
	}
	return items
}

// payloadsResolved drops the references of the entries put back.
func (res *LeanResult) payloadsResolved() { clear(res.refs) }
