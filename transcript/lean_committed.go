package transcript

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// Reading a session as what it is. A strict session (one with a head object) is
// the segments its head commits, never every segment listed: a segment that a
// losing append wrote, which no head commits (DeleteUncommitted removes it
// later), is not part of it. Package repository reads a strict session with
// ReadHead and ReadCommitted; a reader of whole sessions held lean (the command
// line's) uses ListSegmentsHead to tell the two modes apart from the listing
// it needs anyway, and ReadLeanCommitted for a strict one.

// ListSegmentsHead is ListSegments that also reports whether the listing showed
// ref's strict head object (HeadName), at no extra request: the session is
// strict when it did (read its head with ReadHead, and the segments the head
// commits with ReadLeanCommitted or ReadCommitted), default-mode otherwise (read
// the segments listed, Listed). A strict create writes its first segment before
// its head, so a listing between the two shows a session of one segment and no
// head, as a repository's load does.
func (s *Store) ListSegmentsHead(ctx context.Context, ref TranscriptRef) ([]SegmentInfo, bool, error) {
	var head bool
	infos, err := s.listSegmentsHead(ctx, ref, "", &head)
	return infos, head, err
}

// ReadLeanCommitted reads strict session ref as its head h (from ReadHead)
// commits it, lean: the segments h names, union-merged and ordered as ReadLean
// orders the same segments (the result of ReadLean through View(h.Committed())),
// without listing the session. A named segment that is gone (a compaction
// replaced it, and deleted it after its delete delay) makes it read the head
// again and start over from the newer head, at most Config.MaxRelists times (then
// the error wraps ErrVanished); it returns the head it read from. A segment that
// is gone while the head still names it makes the read fail: the head commits
// entries that no reader can have (verify reports it). The error says so and
// does not wrap bucket.ErrNotFound, which means a session that does not exist
// (as it does when the head itself is gone). The payloads are put back
// (readResolved) unless the store is Stored.
func (s *Store) ReadLeanCommitted(ctx context.Context, ref TranscriptRef, h Head) (Head, *LeanResult, error) {
	return readFromHead(ctx, s, ref, h, "transcript.ReadLeanCommitted", s.readLeanHeads)
}

// readLeanHeads is ReadLeanCommitted with the entries as stored: it reads from
// h, and from a newer head each time a segment h names is gone (fromHeads), and
// returns the head it read from.
func (s *Store) readLeanHeads(ctx context.Context, ref TranscriptRef, h Head) (Head, *LeanResult, error) {
	var res *LeanResult
	var infos []SegmentInfo
	var goneErr error
	h, missing, err := s.fromHeads(ctx, ref, h, func(h Head) (bool, error) {
		var err error
		if infos, err = s.committedInfos(ref, h); err != nil {
			return false, err
		}
		segs, corrupt, err := s.PackedReads().fetchSession(ctx, infos)
		if errors.Is(err, bucket.ErrNotFound) {
			goneErr = err
			return true, nil
		}
		if err != nil {
			return false, err
		}
		res = leanMerge(infos, segs)
		res.Corrupt = corrupt
		return false, nil
	})
	switch {
	case err != nil:
		return h, nil, err
	case missing:
		return h, nil, s.missingCommitted(ctx, ref, h, infos, goneErr)
	}
	return h, res, nil
}

// committedInfos returns the segments h names, in key order (the order ReadLean
// fetches and merges a listing in). A name that is not a segment key wraps
// ErrInvalidHead.
func (s *Store) committedInfos(ref TranscriptRef, h Head) ([]SegmentInfo, error) {
	infos := make([]SegmentInfo, 0, len(h.Segments))
	seen := make(map[string]bool, len(h.Segments))
	for _, rel := range h.Segments {
		if seen[rel] {
			continue
		}
		seen[rel] = true
		info, err := ParseKey(s.cfg.Prefix, s.sessionKey(ref, rel))
		if err != nil {
			return nil, fmt.Errorf("%w: head names %q: %w", ErrInvalidHead, rel, err)
		}
		infos = append(infos, info)
	}
	slices.SortFunc(infos, func(a, b SegmentInfo) int { return strings.Compare(a.Key, b.Key) })
	return infos, nil
}

// missingCommitted is the error of a read of the segments head h commits (infos)
// that met one that is gone (err) while h is still the head: it names the
// segments that are missing, and wraps neither err nor bucket.ErrNotFound.
func (s *Store) missingCommitted(ctx context.Context, ref TranscriptRef, h Head, infos []SegmentInfo, err error) error {
	var missing []string
	for _, in := range infos {
		_, serr := s.cfg.Bucket.Stat(ctx, in.Key)
		switch {
		case errors.Is(serr, bucket.ErrNotFound):
			missing = append(missing, sessionRelKey(in.Key))
		case serr != nil:
			return fmt.Errorf("read %s: %w", ref, serr)
		}
	}
	if len(missing) == 0 {
		return fmt.Errorf("read %s: its head (%s, version %d) commits a segment that is missing: %v", ref, HeadName, h.Version, err)
	}
	return fmt.Errorf("read %s: its head (%s, version %d) commits segments that are missing: %s (%d of %d)",
		ref, HeadName, h.Version, strings.Join(missing, ", "), len(missing), len(infos))
}
