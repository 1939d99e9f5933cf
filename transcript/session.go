package transcript

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// A session is created once, with its first segment (the caller's header and
// entries) and, in strict mode, its head; a strict session then grows one
// committed segment at a time (CommitSegment). These are the writes of package
// repository; the head object is described at Head.

// CreateOptions are the options of CreateSession.
type CreateOptions struct {
	// Strict gives the session a head object that commits its first segment, with
	// head entry Head ("" for none).
	Strict bool
	// Head is the head entry of a strict session's first head.
	Head string
	// Summary is what the strict session's first head records for lists (see
	// Summary; its Updated is set to the segment's key time); nil writes a head
	// of format 1, without one.
	Summary *Summary
	// Refs, when not nil, says that the entries are as stored, as a Stored read of
	// a session of the same namespace returned them: Refs[i] holds the payload
	// references of entries[i] (Entry.Refs), which the segment copies, so that no
	// payload is read, hashed or stored again (a fork; see AppendStored).
	Refs [][]segment.PayloadRef
	// Check, with Refs, is the look at the namespace's payload deletion marks
	// taken before the read that returned the entries (CheckPayloads): the
	// segment relies on it and looks at no payload object (see AppendChecked).
	Check *PayloadCheck
}

// SessionExists reports whether ref holds a session: a strict head, or a
// segment holding the session's header. Segments without the header (left by
// appends that raced the session's deletion, by a delete that stopped part
// way or by a partial copy) are no session, as every read takes them (see
// Delete), and do not count; nor do deletion marks, directory markers and
// stray keys. It lists the prefix once and, without a head, reads segments,
// the highest level first, until one holds the header: one GET for a session
// a writer started (a segment gone since the listing, or unreadable, counts as
// holding it: nothing is taken for leftovers while a compaction or a delete
// moves the session's segments). A store bound to another namespace sees no
// session there.
func (s *Store) SessionExists(ctx context.Context, ref TranscriptRef) (bool, error) {
	exists, _, err := s.sessionStart(ctx, ref)
	return exists, err
}

// sessionStart reports whether ref holds a session (SessionExists) and, when
// it does not, the keys of the segments it read and found without the
// session's header: leftovers, which a create removes first.
func (s *Store) sessionStart(ctx context.Context, ref TranscriptRef) (bool, []string, error) {
	ref, visible, err := s.checkRef(ref)
	if err != nil || !visible {
		return false, nil, err
	}
	ls, err := s.sessionObjects(ctx, ref)
	if err != nil {
		return false, nil, err
	}
	if ls.strict {
		return true, nil, nil
	}
	order := slices.Clone(ls.infos)
	// A compaction's output holds the header of the segments it merged; within
	// a level the header's segment sorts first.
	slices.SortStableFunc(order, func(a, b SegmentInfo) int { return b.Level - a.Level })
	var leftovers []string
	for _, in := range order {
		seg, _, err := s.readSegmentAsStored(ctx, in.Key)
		switch {
		case errors.Is(err, bucket.ErrNotFound), errors.Is(err, segment.ErrCorrupt):
			// Gone since the listing (a compaction's input, whose output the
			// listing may lack, or a delete under way), or unreadable: it may
			// hold the header. Nothing is taken for leftovers then; what reads
			// the session says what it is.
			return true, nil, nil
		case err != nil:
			return false, nil, fmt.Errorf("look for the header of %s: %w", ref, err)
		}
		if slices.ContainsFunc(seg.Entries, func(e []byte) bool { _, err := pi.ParseHeader(e); return err == nil }) {
			return true, nil, nil
		}
		leftovers = append(leftovers, in.Key)
	}
	return false, leftovers, nil
}

// CreateSession stores a new session ref: entries (the caller's session header
// first, then any entries) as its first segment, written by w, and, when
// opts.Strict, a head committing that segment. A session that exists (a head,
// or a segment holding its header: SessionExists) gives an error wrapping
// bucket.ErrExists and writes nothing; segments without the header, which are
// no session, are deleted first (a default-mode read would merge them in). Two
// creates of one strict session racing each other are decided by the head's
// create-only write: the loser's segment is deleted and it gets bucket.ErrExists.
// A default-mode create lists the session once its segment is written: when
// another segment sorts first (another create's, which readers take the header
// of), it deletes its own and gets bucket.ErrExists too. Two creates can still
// both succeed when one's key sorts first but its segment lands after the
// other's listing (their headers are then siblings, and readers take the
// first): only strict mode settles a create race exactly. It returns the
// segment and, when strict, the head as stored.
func (s *Store) CreateSession(ctx context.Context, ref TranscriptRef, entries [][]byte, w *Writer, opts CreateOptions) (SegmentInfo, Head, error) {
	exists, leftovers, err := s.sessionStart(ctx, ref)
	if err != nil {
		return SegmentInfo{}, Head{}, fmt.Errorf("create %s: %w", ref, err)
	}
	if exists {
		return SegmentInfo{}, Head{}, fmt.Errorf("create %s: %w", ref.Norm(), bucket.ErrExists)
	}
	// Segments without a header are no session, but a default-mode read of the
	// new one would merge their entries in: they go first.
	if err := s.deleteKeys(ctx, leftovers); err != nil {
		return SegmentInfo{}, Head{}, fmt.Errorf("create %s: delete leftovers: %w", ref.Norm(), err)
	}
	var info SegmentInfo
	if opts.Refs != nil {
		info, err = s.appendCopied(ctx, ref, ref.Namespace, opts.Check, entries, opts.Refs, w)
	} else {
		info, err = s.AppendSegment(ctx, ref, entries, w)
	}
	if err != nil {
		return SegmentInfo{}, Head{}, fmt.Errorf("create %s: %w", ref.Norm(), err)
	}
	if !opts.Strict {
		infos, err := s.ListSegments(ctx, ref)
		if err != nil {
			return SegmentInfo{}, Head{}, fmt.Errorf("create %s: %w", ref.Norm(), err)
		}
		if len(infos) > 0 && infos[0].Key != info.Key {
			_ = s.cfg.Bucket.Delete(ctx, info.Key) // best effort: a second header is harmless
			return SegmentInfo{}, Head{}, fmt.Errorf("create %s: %w: created at the same time by another writer", ref.Norm(), bucket.ErrExists)
		}
		return info, Head{}, nil
	}
	h, err := s.WriteHead(ctx, ref, Head{}, Head{}.Commit(info.Key, opts.Head, stamped(opts.Summary, info)))
	if err != nil {
		_ = s.cfg.Bucket.Delete(ctx, info.Key) // best effort: it is not committed
		if errors.Is(err, ErrConflict) {
			return SegmentInfo{}, Head{}, fmt.Errorf("create %s: %w", ref.Norm(), bucket.ErrExists)
		}
		return SegmentInfo{}, Head{}, fmt.Errorf("create %s: %w", ref.Norm(), err)
	}
	return info, h, nil
}

// CommitSegment stores entries as a new segment of strict session ref, written
// by w, and commits it: it advances the head from prev (as read) to one that
// also names the segment, with head entry entry and summary sum (nil keeps
// prev's as it is; sum's Updated is set to the segment's key time), by a
// conditional write (WriteHead). It returns the segment and the
// head that commits it: the one written, or, when the answer to the head write
// was lost although the write took effect, the stored head (which other writers
// may have advanced since; its Version then exceeds prev's by more than one).
//
// A head that only a compaction moved since prev (same Version and Entry: the
// compaction replaced committed segments by their union) is no conflict: the
// commit is made again on the head as it is now, so the compaction job never
// makes an append fail. When another writer committed first, the segment is
// deleted at once and the error wraps ErrConflict; when the head is gone (the
// session was deleted), bucket.ErrNotFound. Any other failure of the head write
// leaves the segment uncommitted for DeleteUncommitted: readers of the head
// never see it.
func (s *Store) CommitSegment(ctx context.Context, ref TranscriptRef, prev Head, entries [][]byte, w *Writer, entry string, sum *Summary) (SegmentInfo, Head, error) {
	return s.commit(ctx, ref, prev, entry, sum, func() (SegmentInfo, error) { return s.AppendSegment(ctx, ref, entries, w) })
}

// CommitParsed is CommitSegment of entries their caller has parsed, written
// as AppendParsed writes them.
func (s *Store) CommitParsed(ctx context.Context, ref TranscriptRef, prev Head, entries []ParsedEntry, w *Writer, entry string, sum *Summary) (SegmentInfo, Head, error) {
	return s.commit(ctx, ref, prev, entry, sum, func() (SegmentInfo, error) { return s.AppendParsed(ctx, ref, entries, w) })
}

// commit is CommitSegment with the segment written by write.
func (s *Store) commit(ctx context.Context, ref TranscriptRef, prev Head, entry string, sum *Summary, write func() (SegmentInfo, error)) (SegmentInfo, Head, error) {
	info, err := write()
	if err != nil {
		return SegmentInfo{}, Head{}, err
	}
	if sum == nil {
		sum = prev.Summary
	} else {
		sum = stamped(sum, info)
	}
	base := prev
	for attempt := 0; ; attempt++ {
		next, werr := s.WriteHead(ctx, ref, base, base.Commit(info.Key, entry, sum))
		if werr == nil {
			return info, next, nil
		}
		cur, err := s.ReadHead(ctx, ref)
		if err == nil {
			if ok, herr := s.headHolds(ctx, ref, prev, cur, info.Key); herr != nil {
				return SegmentInfo{}, Head{}, herr
			} else if ok {
				return info, cur, nil // the write took effect; its answer was lost
			}
		}
		if err != nil && !errors.Is(err, bucket.ErrNotFound) || !errors.Is(werr, ErrConflict) {
			return SegmentInfo{}, Head{}, werr
		}
		if err == nil && cur.Version == prev.Version && cur.Entry == prev.Entry && attempt < s.cfg.MaxRelists {
			base = cur // only a compaction moved the head: commit on top of it
			continue
		}
		_ = s.cfg.Bucket.Delete(ctx, info.Key) // best effort: garbage either way
		if err != nil {
			return SegmentInfo{}, Head{}, fmt.Errorf("commit to %s: %w", ref.Norm(), err)
		}
		return SegmentInfo{}, Head{}, fmt.Errorf("commit to %s: %w: another writer committed first (head %q)", ref.Norm(), ErrConflict, cur.Entry)
	}
}

// stamped returns a copy of sum (nil stays nil) updated as of the segment info:
// the last append.
func stamped(sum *Summary, info SegmentInfo) *Summary {
	if sum == nil {
		return nil
	}
	c := *sum
	c.Updated = info.Time
	return &c
}

// headHolds reports whether cur, read after a head write from prev whose answer
// was lost, commits the segment at key: it names it, or (when commits followed
// and a compaction merged it already) a compacted segment that cur names and prev
// did not holds it as an input, directly or through a compacted input of its own.
func (s *Store) headHolds(ctx context.Context, ref TranscriptRef, prev, cur Head, key string) (bool, error) {
	if cur.Commits(key) {
		return true, nil
	}
	if cur.Version <= prev.Version {
		return false, nil
	}
	rel := sessionRelKey(key)
	var queue []string
	for _, named := range cur.Segments {
		if relLevel(named) > 0 && !prev.Commits(named) {
			queue = append(queue, named)
		}
	}
	for seen := map[string]bool{}; len(queue) > 0; queue = queue[1:] {
		if seen[queue[0]] {
			continue
		}
		seen[queue[0]] = true
		m, err := s.ReadSegmentMeta(ctx, s.sessionKey(ref, queue[0]))
		if errors.Is(err, bucket.ErrNotFound) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("commit to %s: %w", ref.Norm(), err)
		}
		for _, in := range m.Inputs {
			switch in = sessionRelKey(in); {
			case in == rel:
				return true, nil
			case relLevel(in) > 0 && !prev.Commits(in):
				queue = append(queue, in)
			}
		}
	}
	return false, nil
}

// DeleteUncommitted deletes the segments of strict session ref that its head
// does not commit and that were created (by key time) before cutoff: segments of
// writers that lost a head race, or crashed between their segment and their head
// write, and outputs of compactions that lost the race for the head. A segment
// held by a compacted segment the head names (a compaction input waiting for its
// delete delay) is committed: the compaction job deletes it. cutoff must leave out
// every append still in progress (the longest time from a segment's creation to
// its head write, clock skew included). It lists before it reads the head, so a
// segment committed in between is kept. It returns how many segments it deleted;
// a session without a head has none to delete, and one without a head or
// segments gives bucket.ErrNotFound.
func (s *Store) DeleteUncommitted(ctx context.Context, ref TranscriptRef, cutoff time.Time) (int, error) {
	infos, err := s.ListSegments(ctx, ref)
	if err != nil {
		return 0, err
	}
	h, err := s.ReadHead(ctx, ref)
	if errors.Is(err, bucket.ErrNotFound) {
		if len(infos) == 0 {
			return 0, err
		}
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	committed, err := s.committedClosure(ctx, ref.Norm(), h)
	if err != nil {
		return 0, err
	}
	deleted := 0
	for _, info := range infos {
		if committed[sessionRelKey(info.Key)] || info.Time.After(cutoff) {
			continue
		}
		if err := s.cfg.Bucket.Delete(ctx, info.Key); err != nil {
			return deleted, wrapKey("delete uncommitted segment", info.Key, err)
		}
		deleted++
	}
	return deleted, nil
}

// committedClosure returns, by relative key, the segments h commits: those it
// names and the inputs of the compacted segments it names, down every level (the
// inputs of a compacted input too). A named compacted segment whose metadata
// cannot be read fails it, so that nothing it may hold is taken for garbage; an
// input that is gone is skipped.
func (s *Store) committedClosure(ctx context.Context, ref TranscriptRef, h Head) (map[string]bool, error) {
	out := make(map[string]bool, len(h.Segments))
	var queue []string
	for _, rel := range h.Segments {
		out[rel] = true
		if relLevel(rel) > 0 {
			queue = append(queue, rel)
		}
	}
	named := len(queue)
	for i := 0; i < len(queue); i++ {
		m, err := s.ReadSegmentMeta(ctx, s.sessionKey(ref, queue[i]))
		if errors.Is(err, bucket.ErrNotFound) && i >= named {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read what the head of %s commits: %w", ref, err)
		}
		for _, in := range m.Inputs {
			k := sessionRelKey(in)
			if relLevel(k) >= 0 && relLevel(k) < relLevel(queue[i]) && !out[k] {
				out[k] = true
				if relLevel(k) > 0 {
					queue = append(queue, k)
				}
			}
		}
	}
	return out, nil
}
