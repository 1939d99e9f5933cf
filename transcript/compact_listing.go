package transcript

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// StrayKeys returns the keys under ref's prefix that are neither a segment key, a
// deletion mark nor the strict head (for example ".../L1/x/L0/y", which an access
// policy's key pattern may let a writer create). Readers and Compact ignore them.
func (s *Store) StrayKeys(ctx context.Context, ref TranscriptRef) ([]string, error) {
	ref, visible, err := s.checkRef(ref)
	if err != nil || !visible {
		return nil, err
	}
	ls, err := s.sessionObjects(ctx, ref)
	return ls.stray, err
}

// sessionListing is what one listing of a session's prefix found.
type sessionListing struct {
	infos  []SegmentInfo       // the segments, in key order
	marks  []bucket.ObjectInfo // the deletion marks
	strict bool                // a strict head exists
	newest time.Time           // the latest ModTime of a segment
	// stray holds the keys under the prefix that are neither a segment, a mark nor
	// the head (readers ignore them; verify names them).
	stray []string
}

// sessionObjects lists everything under ref's prefix in one listing.
func (s *Store) sessionObjects(ctx context.Context, ref TranscriptRef) (sessionListing, error) {
	sp := sessionPrefix(s.cfg.Prefix, ref)
	var ls sessionListing
	err := s.cfg.Bucket.List(ctx, bucket.ListOptions{Prefix: sp}, func(oi bucket.ObjectInfo) error {
		rel := strings.TrimPrefix(oi.Key, sp)
		switch {
		case rel == HeadName:
			ls.strict = true
		case isMarkName(rel):
			ls.marks = append(ls.marks, oi)
		default:
			info, err := ParseKey(s.cfg.Prefix, oi.Key)
			if err != nil {
				ls.stray = append(ls.stray, oi.Key)
				return nil
			}
			info.Size = oi.Size
			ls.infos = append(ls.infos, info)
			if oi.ModTime.After(ls.newest) {
				ls.newest = oi.ModTime
			}
		}
		return nil
	})
	if err != nil {
		return sessionListing{}, fmt.Errorf("list %s: %w", ref, err)
	}
	s.observe(ref, ls.infos)
	return ls, nil
}
