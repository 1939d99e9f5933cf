package transcript

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// SummaryName is the object name, under a default-mode session's key prefix, of
// the cached Summary of the session ({prefix}/{namespace}/{agentId}/{sessionId}/
// SUMMARY.json). Writers of segments (the command line, a SessionTree, follow)
// do not write it: a reader that needs the summary (a repository's list) derives
// it once from the session and stores it with the Tag of the segments it was
// derived from, and derives it again only when the session's segments have
// another Tag. Readers of entries ignore it; Delete removes it with the session.
// A strict session's summary lives in its head instead.
const SummaryName = "SUMMARY.json"

// summaryObjectFormat is the format version of the summary object.
const summaryObjectFormat = 1

// CachedSummary is the content of a summary object: the summary of a
// default-mode session, its active leaf, and the Tag of the segments listed when
// it was derived.
type CachedSummary struct {
	// Summary is what a list shows of the session.
	Summary Summary
	// Leaf is the session's active leaf ("" for none).
	Leaf string
	// Tag is SegmentsTag of the session as listed before the summary was derived.
	Tag string
}

// cachedJSON is the stored form of a CachedSummary:
//
//	{"format":1,"tag":"9f86d08...","leaf":"a1b2c3d4",
//	 "session":{"created":"2026-...Z","updated":"2026-...Z","cwd":"/work","entries":41}}
type cachedJSON struct {
	Format  int          `json:"format"`
	Tag     string       `json:"tag"`
	Leaf    pi.JSString  `json:"leaf"`
	Session *summaryJSON `json:"session"`
}

// summaryKey returns the key of ref's summary object (ref normalised).
func (s *Store) summaryKey(ref TranscriptRef) string {
	return sessionPrefix(s.cfg.Prefix, ref) + SummaryName
}

// ReadSummary reads the summary object of default-mode session ref. A session
// without one gives an error wrapping bucket.ErrNotFound; one that does not parse
// wraps ErrInvalidHead (the caller derives the summary again).
func (s *Store) ReadSummary(ctx context.Context, ref TranscriptRef) (CachedSummary, error) {
	ref, visible, err := s.checkRef(ref)
	if err != nil {
		return CachedSummary{}, err
	}
	if !visible {
		return CachedSummary{}, fmt.Errorf("read summary of %s: %w", ref, bucket.ErrNotFound)
	}
	data, _, err := s.cfg.Bucket.GetWithETag(ctx, s.summaryKey(ref))
	if err != nil {
		return CachedSummary{}, fmt.Errorf("read summary of %s: %w", ref, err)
	}
	cs, err := decodeSummary(data)
	if err != nil {
		return CachedSummary{}, fmt.Errorf("read summary of %s: %w", ref, err)
	}
	return cs, nil
}

// decodeSummary parses the bytes of a summary object. Errors wrap ErrInvalidHead.
func decodeSummary(data []byte) (CachedSummary, error) {
	var cj cachedJSON
	switch err := json.NewDecoder(bytes.NewReader(data)).Decode(&cj); {
	case err != nil:
		return CachedSummary{}, fmt.Errorf("%w: %w", ErrInvalidHead, err)
	case cj.Format != summaryObjectFormat || cj.Session == nil || cj.Tag == "":
		return CachedSummary{}, fmt.Errorf("%w: summary format %d, want %d with a tag and a session",
			ErrInvalidHead, cj.Format, summaryObjectFormat)
	}
	return CachedSummary{Summary: *cj.Session.summary(), Leaf: string(cj.Leaf), Tag: cj.Tag}, nil
}

// encodeSummary returns the bytes WriteSummary stores for cs.
func encodeSummary(cs CachedSummary) ([]byte, error) {
	return json.Marshal(cachedJSON{Format: summaryObjectFormat, Tag: cs.Tag, Leaf: pi.JSString(cs.Leaf), Session: cs.Summary.toJSON()})
}

// WriteSummary stores cs as the summary object of default-mode session ref,
// replacing any (the object is a cache: the last writer wins, and a stale one is
// derived again by the next reader whose listing has another tag). A strict
// session keeps its summary in its head: writing one for it is refused with
// ErrInvalidRef.
func (s *Store) WriteSummary(ctx context.Context, ref TranscriptRef, cs CachedSummary) error {
	ref, visible, err := s.checkRef(ref)
	if err != nil {
		return err
	}
	if !visible {
		return fmt.Errorf("write summary of %s: %w: %w", ref, errOutside(ref), ErrInvalidRef)
	}
	if cs.Tag == "" {
		return fmt.Errorf("write summary of %s: no segments tag", ref)
	}
	data, err := encodeSummary(cs)
	if err != nil {
		return fmt.Errorf("write summary of %s: %w", ref, err)
	}
	if err := s.cfg.Bucket.Replace(ctx, s.summaryKey(ref), bytes.NewReader(data), int64(len(data)),
		bucket.PutOptions{ContentType: "application/json"}); err != nil {
		return fmt.Errorf("write summary of %s: %w", ref, err)
	}
	return nil
}

// SegmentsTag lists session ref once and returns a tag of the set of segment keys
// it holds (a hash of the keys relative to the session, in key order), whether
// it has a head (a strict session) and how many segments it has. Two listings
// get one tag exactly when they show the same segments, so a summary derived
// after a listing is current as long as the tag stays the same: an append (even
// one that lands late, with an older key) and a compaction change it. A session
// without segments or a head does not exist (0 segments, no head).
func (s *Store) SegmentsTag(ctx context.Context, ref TranscriptRef) (tag string, strict bool, n int, err error) {
	ref, visible, err := s.checkRef(ref)
	if err != nil || !visible {
		return "", false, 0, err
	}
	ls, err := s.sessionObjects(ctx, ref)
	if err != nil {
		return "", false, 0, err
	}
	h := sha256.New()
	for _, in := range ls.infos {
		h.Write([]byte(sessionRelKey(in.Key)))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil)), ls.strict, len(ls.infos), nil
}

// isSummaryName reports whether rel (relative to a session) names its summary
// object.
func isSummaryName(rel string) bool { return rel == SummaryName }
