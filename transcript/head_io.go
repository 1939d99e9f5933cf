package transcript

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// Head object formats: 1 (version, head, segments) is read; 2 adds the session's
// Summary and is what WriteHead writes.
const (
	headFormatV1 = 1
	headFormat   = 2
)

// headJSON is the stored form of a Head.
type headJSON struct {
	Format   int          `json:"format"`
	Version  uint64       `json:"version"`
	Head     pi.JSString  `json:"head"`
	Segments []string     `json:"segments"`
	Session  *summaryJSON `json:"session,omitempty"`
}

// headKey returns the key of ref's head object (ref normalised).
func (s *Store) headKey(ref TranscriptRef) string {
	return sessionPrefix(s.cfg.Prefix, ref) + HeadName
}

// ReadHead reads the head object of strict session ref, with its ETag. A session
// without one (a default-mode session, or none at all) gives an error wrapping
// bucket.ErrNotFound; one that does not parse wraps ErrInvalidHead. The key times
// of the level-0 segments it names feed the store's clock, so that a segment this
// store writes next sorts after every one committed (key order is then commit
// order, which Compact needs to merge a strict session's segments).
func (s *Store) ReadHead(ctx context.Context, ref TranscriptRef) (Head, error) {
	return s.ReadHeadSince(ctx, ref, Head{})
}

// ReadHeadSince is ReadHead for a caller that holds known, a head of ref it
// read or wrote before (the zero Head for none): when the stored head is still
// known (the same ETag, which changes whenever the bytes do, and the bytes
// hold a version counter), it returns known without parsing the object again,
// and on a bucket that is a bucket.ChangeReader (S3) without its bytes being
// sent again. A poll or an append that finds the head unchanged then costs a
// GET answered 304, not a transfer and a parse of every segment key the head
// names.
func (s *Store) ReadHeadSince(ctx context.Context, ref TranscriptRef, known Head) (Head, error) {
	ref, visible, err := s.checkRef(ref)
	if err != nil {
		return Head{}, err
	}
	if !visible {
		return Head{}, fmt.Errorf("read head of %s: %w", ref, bucket.ErrNotFound)
	}
	data, etag, changed, err := bucket.GetIfChanged(ctx, s.cfg.Bucket, s.headKey(ref), known.etag)
	if err != nil {
		return Head{}, fmt.Errorf("read head of %s: %w", ref, err)
	}
	if !changed {
		return known, nil // its key times fed the clock when it was read or written
	}
	h, err := decodeHead(data)
	if err != nil {
		return Head{}, fmt.Errorf("read head of %s: %w", ref, err)
	}
	h.etag = etag
	s.observeHead(ref, h)
	return h, nil
}

// decodeHead parses the bytes of a head object (format 1 or 2). Errors wrap
// ErrInvalidHead.
func decodeHead(data []byte) (Head, error) {
	var hj headJSON
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&hj); err != nil {
		return Head{}, fmt.Errorf("%w: %w", ErrInvalidHead, err)
	}
	switch {
	case hj.Format != headFormatV1 && hj.Format != headFormat:
		return Head{}, fmt.Errorf("%w: format %d, want %d or %d", ErrInvalidHead, hj.Format, headFormatV1, headFormat)
	case hj.Format == headFormat && hj.Session == nil:
		return Head{}, fmt.Errorf("%w: format %d without a session summary", ErrInvalidHead, hj.Format)
	}
	for _, rel := range hj.Segments {
		if relLevel(rel) < 0 {
			return Head{}, fmt.Errorf("%w: %q is not a segment key", ErrInvalidHead, rel)
		}
	}
	return Head{Version: hj.Version, Entry: string(hj.Head), Segments: hj.Segments, Summary: hj.Session.summary()}, nil
}

// encodeHead returns the bytes WriteHead stores for h: format 2 when h has a
// Summary, else format 1.
func encodeHead(h Head) ([]byte, error) {
	hj := headJSON{Format: headFormat, Version: h.Version, Head: pi.JSString(h.Entry), Segments: h.Segments, Session: h.Summary.toJSON()}
	if h.Summary == nil {
		hj.Format = headFormatV1
	}
	if hj.Segments == nil {
		hj.Segments = []string{}
	}
	return json.Marshal(hj)
}

// observeHead feeds the clock with the newest key time of the level-0 segments h
// names.
//
// A key's time is fixed-width digits (keyTimeLayout), so the newest time is
// the greatest string: only that one is parsed (with the others as a fallback
// should it not parse), not one time per key of a head that names thousands.
func (s *Store) observeHead(ref TranscriptRef, h Head) {
	newestRel, newestName := "", ""
	for _, rel := range h.Segments {
		if relLevel(rel) != 0 {
			continue
		}
		if _, name, _ := strings.Cut(rel, "/"); name > newestName {
			newestRel, newestName = rel, name
		}
	}
	if newestRel == "" {
		return
	}
	newest, err := relKeyTime(newestRel)
	if err != nil {
		newest = time.Time{}
		for _, rel := range h.Segments {
			if relLevel(rel) != 0 {
				continue
			}
			if t, err := relKeyTime(rel); err == nil && t.After(newest) {
				newest = t
			}
		}
	}
	if !newest.IsZero() {
		s.cfg.Clock.Observe(ref, newest)
	}
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
	data, err := encodeHead(next)
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
