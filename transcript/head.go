package transcript

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// HeadName is the object name of a strict session's head, under the session's key
// prefix: {prefix}/{namespace}/{agentId}/{sessionId}/HEAD.json. It is not a
// segment key, so segment listings skip it; Delete removes it with the session,
// and Compact leaves a session that has one alone (its head names the committed
// segments, and only a conditional write may move it).
const HeadName = "HEAD.json"

// headFormat is the format version of the head object.
const headFormat = 1

// Head is the head object of a strict session: the id of its head entry and the
// segments committed so far, advanced only by conditional writes (WriteHead), so
// that of several writers advancing one head exactly one wins. Its JSON is
//
//	{"format":1,"version":7,"head":"a1b2c3d4","segments":["L0/2026...zst", ...]}
//
// version counts commits (so two versions never have the same bytes, whatever an
// ETag is made of), head is the head entry ("" for none) and segments names the
// committed segments in commit order, by their keys relative to the session
// ("L0/{name}.jsonl.zst"), so that a copy of the bucket under another prefix
// still reads. A Head remembers the ETag it was read or written with; the zero
// Head is a head not stored yet.
type Head struct {
	// Version counts the commits.
	Version uint64
	// Entry is the id of the head entry ("" for none).
	Entry string
	// Segments names the committed segments in commit order, relative to the
	// session's key prefix.
	Segments []string
	// etag is the ETag of the stored object this Head was read or written as.
	etag string
}

// headJSON is the stored form of a Head.
type headJSON struct {
	Format   int      `json:"format"`
	Version  uint64   `json:"version"`
	Head     string   `json:"head"`
	Segments []string `json:"segments"`
}

// Commit returns the head after committing the segment with key (a full key or
// one relative to the session) with head entry entry. h is unchanged.
func (h Head) Commit(key, entry string) Head {
	return Head{
		Version:  h.Version + 1,
		Entry:    entry,
		Segments: append(h.Segments[:len(h.Segments):len(h.Segments)], sessionRelKey(key)),
		etag:     h.etag,
	}
}

// Commits reports whether h commits the segment with key (a full key or one
// relative to the session).
func (h Head) Commits(key string) bool {
	return slices.Contains(h.Segments, sessionRelKey(key))
}

// Same reports whether h and o are the same stored version (ETag and version).
func (h Head) Same(o Head) bool { return h.etag == o.etag && h.Version == o.Version }

// headKey returns the key of ref's head object (ref normalised).
func (s *Store) headKey(ref TranscriptRef) string {
	return sessionPrefix(s.cfg.Prefix, ref) + HeadName
}

// ReadHead reads the head object of strict session ref, with its ETag. A session
// without one (a default-mode session, or none at all) gives an error wrapping
// bucket.ErrNotFound; one that does not parse wraps ErrInvalidHead.
func (s *Store) ReadHead(ctx context.Context, ref TranscriptRef) (Head, error) {
	ref, visible, err := s.checkRef(ref)
	if err != nil {
		return Head{}, err
	}
	if !visible {
		return Head{}, fmt.Errorf("read head of %s: %w", ref, bucket.ErrNotFound)
	}
	data, etag, err := s.cfg.Bucket.GetWithETag(ctx, s.headKey(ref))
	if err != nil {
		return Head{}, fmt.Errorf("read head of %s: %w", ref, err)
	}
	var hj headJSON
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&hj); err != nil {
		return Head{}, fmt.Errorf("read head of %s: %w: %w", ref, ErrInvalidHead, err)
	}
	if hj.Format != headFormat {
		return Head{}, fmt.Errorf("read head of %s: %w: format %d, want %d", ref, ErrInvalidHead, hj.Format, headFormat)
	}
	return Head{Version: hj.Version, Entry: hj.Head, Segments: hj.Segments, etag: etag}, nil
}

// WriteHead replaces the head of ref, as read in prev, with next, by a
// conditional write: only if the stored head is still prev (its ETag), or, for a
// prev never stored (the zero Head), only if ref has no head yet. When the
// condition fails nothing is written and the error wraps ErrConflict (and
// bucket.ErrPreconditionFailed). It returns next as stored, with its new ETag.
func (s *Store) WriteHead(ctx context.Context, ref TranscriptRef, prev, next Head) (Head, error) {
	ref, visible, err := s.checkRef(ref)
	if err != nil {
		return Head{}, err
	}
	if !visible {
		return Head{}, fmt.Errorf("write head of %s: %w: %w", ref, errOutside(ref), ErrInvalidRef)
	}
	data, err := json.Marshal(headJSON{Format: headFormat, Version: next.Version, Head: next.Entry, Segments: next.Segments})
	if err != nil {
		return Head{}, fmt.Errorf("write head of %s: %w", ref, err)
	}
	cond := bucket.Cond{IfMatch: prev.etag, IfNoneMatch: prev.etag == ""}
	etag, err := s.cfg.Bucket.PutIf(ctx, s.headKey(ref), bytes.NewReader(data), int64(len(data)), cond)
	if errors.Is(err, bucket.ErrPreconditionFailed) {
		return Head{}, fmt.Errorf("write head of %s: %w: %w", ref, ErrConflict, err)
	}
	if err != nil {
		return Head{}, fmt.Errorf("write head of %s: %w", ref, err)
	}
	next.etag = etag
	return next, nil
}

// Committed returns a filter for View that keeps the segments h commits.
func (h Head) Committed() func(SegmentInfo) bool {
	set := make(map[string]struct{}, len(h.Segments))
	for _, rel := range h.Segments {
		set[rel] = struct{}{}
	}
	return func(info SegmentInfo) bool {
		_, ok := set[sessionRelKey(info.Key)]
		return ok
	}
}

// Replay returns entries (read from segments h commits) in commit order: by the
// position of their segment in h, then by their position in it (an entry of a
// segment h does not commit ranks with the first segment's).
func (h Head) Replay(entries []Entry) []Entry {
	order := make(map[string]int, len(h.Segments))
	for i, rel := range h.Segments {
		order[rel] = i
	}
	out := slices.Clone(entries)
	slices.SortStableFunc(out, func(a, b Entry) int {
		if c := order[sessionRelKey(a.Segment)] - order[sessionRelKey(b.Segment)]; c != 0 {
			return c
		}
		return a.Pos - b.Pos
	})
	return out
}
