package transcript

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/trace"

	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// LeanResult is the union of a session's segments in the order of ReadAll, held
// lean: the decompressed bodies of the segments, and per entry its id and a few
// integers (segment, position, origin, parent) instead of an Entry. A session of a
// million entries then needs about twice its JSONL size, where a MergeResult
// needs several times that. Entries are addressed by their place in the merge
// order, 0 to Len()-1.
type LeanResult struct {
	// Segments, Conflicts, Losers, Invalid, Corrupt and Cycles are those of the
	// MergeResult that ReadAll returns for the same segments.
	Segments  []SegmentInfo
	Conflicts []Conflict
	Losers    []Entry
	Invalid   []error
	Corrupt   []CorruptSegment
	Cycles    int

	keys   []string               // segment keys, by segment number
	held   []string               // keys of the segments fetched and verified
	bodies [][][]byte             // entries of each segment (slices of its body)
	refs   [][]segment.PayloadRef // payload references of each segment's entries (Stored reads)
	okeys  []string               // origin keys, by origin number
	items  []leanItem             // the winners, in merge order
	ids    idTable                // finds the item of an id
	// oddParents holds the parentId of the entries whose parentId is not the id
	// of their parent entry: one that names no entry (dangling) or the entry itself.
	oddParents map[int32]string
}

// leanItem is one winning entry of a LeanResult.
type leanItem struct {
	id         string
	seg, pos   int32
	okey, opos uint32
	parent     int32 // merge-order index of the parent entry; -1 for none
	parsed     bool  // read without an entry index (see leanVersion)
}

// Size returns the size of the merged entries as JSONL (each entry and a newline).
func (r *LeanResult) Size() int64 {
	var n int64
	for i := range r.items {
		n += int64(len(r.Raw(i))) + 1
	}
	return n
}

// Len returns the number of entries (distinct ids).
func (r *LeanResult) Len() int { return len(r.items) }

// Raw returns the bytes of entry i (in merge order), without a newline. The
// bytes belong to the result: the caller must not modify them.
func (r *LeanResult) Raw(i int) []byte {
	it := &r.items[i]
	return r.bodies[it.seg][it.pos]
}

// Refs returns the payloads entry i holds by reference (segment.PayloadRef
// offsets in Raw(i)): none, unless the result was read through a Stored store.
func (r *LeanResult) Refs(i int) []segment.PayloadRef {
	it := &r.items[i]
	return r.entryRefs(it.seg, it.pos)
}

// entryRefs returns the references of the entry at pos of segment seg.
func (r *LeanResult) entryRefs(seg, pos int32) []segment.PayloadRef {
	if refs := r.refs[seg]; refs != nil {
		return segment.EntryRefs(refs, uint32(pos))
	}
	return nil
}

// ID returns the id of entry i.
func (r *LeanResult) ID(i int) string { return r.items[i].id }

// Parent returns the merge-order index of the parent of entry i, or false when its
// parentId is empty, names no entry of the result or names the entry itself.
func (r *LeanResult) Parent(i int) (int, bool) {
	p := r.items[i].parent
	return int(p), p >= 0
}

// hasDangling reports whether some entry's parentId names no entry of the
// result (rather than none, or the entry itself).
func (r *LeanResult) hasDangling() bool {
	for i, pid := range r.oddParents {
		if pid != r.items[i].id {
			return true
		}
	}
	return false
}

// Index returns the merge-order index of the entry with the given id.
func (r *LeanResult) Index(id string) (int, bool) {
	if len(r.ids.slots) == 0 {
		return -1, false
	}
	i, _, ok := r.ids.find(id, r.itemID)
	return int(i), ok
}

// itemID returns the id of item i.
func (r *LeanResult) itemID(i int32) string { return r.items[i].id }

// Origin returns the origin of entry i (Entry(i).Origin, without building the
// Entry).
func (r *LeanResult) Origin(i int) Origin {
	it := &r.items[i]
	return Origin{Key: r.okeys[it.okey], Pos: int(it.opos)}
}

// Entry returns entry i as ReadAll returns it.
func (r *LeanResult) Entry(i int) Entry {
	it := &r.items[i]
	e := Entry{ID: it.id, ParentID: r.oddParents[int32(i)], Raw: r.Raw(i), Segment: r.keys[it.seg], Pos: int(it.pos),
		Origin: r.Origin(i), Refs: r.entryRefs(it.seg, it.pos)}
	if it.parent >= 0 {
		e.ParentID = r.items[it.parent].id
	}
	if it.parsed {
		p, _ := parseStoredEntry(e.Raw)
		e.Time, e.Type = p.Time, p.Type
	}
	return e
}

// WriteJSONL writes every entry in merge order, each followed by "\n".
func (r *LeanResult) WriteJSONL(w io.Writer) error {
	for i := range r.items {
		raw := r.Raw(i)
		if _, err := w.Write(raw); err != nil {
			return err
		}
		if _, err := w.Write([]byte{'\n'}); err != nil {
			return err
		}
	}
	return nil
}

// ReadLean reads ref like ReadAll (same listing, relisting, verification and
// order) and returns the result lean (LeanResult).
func (s *Store) ReadLean(ctx context.Context, ref TranscriptRef) (*LeanResult, error) {
	ctx, task := trace.NewTask(ctx, "transcript.ReadLean")
	defer task.End()
	res, err := readListed(ctx, s, ref, func(infos []SegmentInfo) (*LeanResult, error) {
		segs, corrupt, err := s.PackedReads().fetchSession(ctx, infos)
		if err != nil {
			return nil, err
		}
		res := leanMerge(infos, segs)
		res.Corrupt = corrupt
		return res, nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil // readListed put the payloads back (readResolved)
}

// Held returns the set of segments the result holds the entries of: every
// listed segment that was fetched and verified (a segment skipped as corrupt is
// not held). A reader that keeps the result can sync from it with ReadNew.
func (r *LeanResult) Held() SegmentSet { return NewSegmentSet(r.held...) }

// ReadLeanStored is ReadLean through the Stored store of s: the entries as
// stored, payload references in place (LeanResult.Refs), no payload fetched.
// EachResolved puts the payloads back as they are needed.
func (s *Store) ReadLeanStored(ctx context.Context, ref TranscriptRef) (*LeanResult, error) {
	return s.Stored().ReadLean(ctx, ref)
}

// ReadLean is Store.ReadLean that uses the listing in hand the first time it is
// asked about the listed session (as ReadNew does), and the segments fetched
// ahead (ForEachListedSessionAhead) when there are; a listed segment that has
// vanished meanwhile, or an entry read without its parent, makes it read the
// session as Store.ReadLean does, from a listing of its own.
func (l *Listed) ReadLean(ctx context.Context, ref TranscriptRef) (*LeanResult, error) {
	return l.readLean(ctx, ref, l.Store)
}

// ReadLeanStored is Listed.ReadLean with the entries as stored (see
// Store.ReadLeanStored).
func (l *Listed) ReadLeanStored(ctx context.Context, ref TranscriptRef) (*LeanResult, error) {
	return l.readLean(ctx, ref, l.Store.Stored())
}

// readLean is Listed.ReadLean through s, l's store or its Stored store.
func (l *Listed) readLean(ctx context.Context, ref TranscriptRef, s *Store) (*LeanResult, error) {
	l.mu.Lock()
	infos, ahead := l.infos, l.ahead
	if ref.Norm() == l.ref {
		l.infos, l.ahead = nil, nil
	}
	l.mu.Unlock()
	if infos != nil && ref.Norm() == l.ref {
		var segs []*segment.Segment
		var corrupt []CorruptSegment
		var err error
		if ahead != nil {
			select {
			case <-ahead.done:
				segs, corrupt, err = ahead.segs, ahead.corrupt, ahead.err
			case <-ctx.Done():
				return nil, fmt.Errorf("read %s: %w", ref, ctx.Err())
			}
		} else {
			segs, corrupt, err = s.PackedReads().fetchSession(ctx, infos)
		}
		if err != nil && !errors.Is(err, bucket.ErrNotFound) {
			return nil, fmt.Errorf("read %s: %w", ref, err)
		}
		if err == nil {
			res := leanMerge(infos, segs)
			res.Corrupt = corrupt
			// An entry without its parent may be the listing's doing (see
			// healDangling): the session's own read lists it again.
			if !res.hasDangling() {
				return readResolved(ctx, s, l.ref, func() (*LeanResult, error) { return res, nil })
			}
		}
	}
	return s.ReadLean(ctx, ref)
}
