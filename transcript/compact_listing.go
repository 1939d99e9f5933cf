package transcript

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// StrayKeys returns the keys under ref's prefix that are neither a segment key, a
// deletion or retention mark nor the strict head (for example ".../L1/x/L0/y", which an access
// policy's key pattern may let a writer create). Readers and Compact ignore them.
func (s *Store) StrayKeys(ctx context.Context, ref TranscriptRef) ([]string, error) {
	ref, visible, err := s.checkRef(ref)
	if err != nil || !visible {
		return nil, err
	}
	ls, err := s.sessionObjects(ctx, ref)
	return ls.stray, err
}

// Leftovers are the objects under a session's prefix that no reader and no
// job reads (Store.Leftovers): verify names them, so that an operator can
// remove them.
type Leftovers struct {
	// Stray are the keys that are neither a segment key, a deletion or
	// retention mark nor the strict head (StrayKeys).
	Stray []string
	// IgnoredMarks are the keys of deletion marks that the compaction job
	// ignores, never trusts and never removes: their content is not a mark, or
	// names another segment than the one their key stands for.
	IgnoredMarks []string
}

// Leftovers lists ref's prefix once and returns what lies there unread (see
// Leftovers): a GET of each deletion mark, which exists only while a
// compaction's inputs wait for their delete delay.
func (s *Store) Leftovers(ctx context.Context, ref TranscriptRef) (Leftovers, error) {
	_, left, err := s.ListSegmentsWithLeftovers(ctx, ref)
	return left, err
}

// ListSegmentsWithLeftovers is ListSegments and Leftovers from one listing of
// ref's prefix (a checker that needs both sends one LIST, not two).
func (s *Store) ListSegmentsWithLeftovers(ctx context.Context, ref TranscriptRef) ([]SegmentInfo, Leftovers, error) {
	ref, visible, err := s.checkRef(ref)
	if err != nil || !visible {
		return nil, Leftovers{}, err
	}
	ls, err := s.sessionObjects(ctx, ref)
	if err != nil {
		return nil, Leftovers{}, err
	}
	left, err := s.leftoversOf(ctx, ref, ls)
	return s.withoutHidden(ls.infos), left, err
}

// leftoversOf is Leftovers of the listing ls of ref.
func (s *Store) leftoversOf(ctx context.Context, ref TranscriptRef, ls sessionListing) (Leftovers, error) {
	out := Leftovers{Stray: ls.stray}
	for _, oi := range ls.marks {
		_, ok, err := s.markAt(ctx, ref, oi)
		switch {
		case errors.Is(err, bucket.ErrNotFound):
			// collected since the listing
		case err != nil:
			return Leftovers{}, err
		case !ok:
			out.IgnoredMarks = append(out.IgnoredMarks, oi.Key)
		}
	}
	return out, nil
}

// sessionListing is what one listing of a session's prefix found.
type sessionListing struct {
	infos []SegmentInfo       // the segments, in key order
	marks []bucket.ObjectInfo // the deletion marks
	// retention is the session's retention mark (RetentionMarkName), if listed.
	retention *bucket.ObjectInfo
	strict    bool      // a strict head exists
	newest    time.Time // the latest ModTime of a segment
	// written is the latest, over the segments, of the earlier of the
	// segment's ModTime and the time in its key: when the session was last
	// written as far as a copy of the bucket can tell (retention ranks by it).
	written time.Time
	// stored holds each segment's ModTime, by key: its age on the bucket's clock.
	stored map[string]time.Time
	// stray holds the keys under the prefix that are neither a segment, a mark nor
	// the head (readers ignore them; verify names them).
	stray []string
	// summary is the key of the session's cached summary (SummaryName), if listed.
	summary string
	// hiding holds the stray keys named like a folder of the session's layout
	// (hidesFolder): they hide what lies under that folder from the listings of
	// some S3 servers (MinIO), so this listing may lack segments or marks.
	hiding []string
}

// ErrHiddenSegments is wrapped by the error of a session whose prefix holds an
// object named like one of its folders ("L0", "gc"): MinIO lists nothing under
// that folder, so what is stored there, the newest segments perhaps, is missed
// by every listing, and nothing may be decided from what the listings show.
var ErrHiddenSegments = errors.New("an object hides segments from the listings")

// hidingError is the error for a session whose listing found the objects keys
// named like its folders.
func hidingError(keys []string) error {
	return fmt.Errorf("%w: %s, named like a folder of the session, hides what is stored under it from the listings of some S3 servers (MinIO), the session's newest segments perhaps: move or delete it, and they list again",
		ErrHiddenSegments, strings.Join(keys, ", "))
}

// hidesInNamespace reports whether rel, the key of an object relative to its
// namespace's prefix, is named like a folder of the layout below it: an
// agent's ("coder"), a session's ("coder/s1") or one of a session's folders
// ("coder/s1/L0", "coder/s1/gc"). Some S3 servers (MinIO) list nothing under
// a folder an object of its name hides, so a listing that meets one may lack
// segments of the sessions there.
func hidesInNamespace(rel string) bool {
	parts := strings.SplitN(rel, "/", 3)
	for i, p := range parts[:min(len(parts), 2)] {
		if ValidatePart("name", p) != nil {
			return false
		}
		if i == len(parts)-1 {
			return true // an object named like an agent or a session
		}
	}
	return len(parts) == 3 && hidesFolder(parts[2])
}

// hidesFolder reports whether rel, the key of an object relative to its
// session's prefix, names a folder of the session's layout: a level ("L0") or
// the marks' folder ("gc", "gc/L0").
func hidesFolder(rel string) bool {
	dir, sub, nested := strings.Cut(rel, "/")
	if nested {
		return dir == markDir && isLevelOrMark(sub) && sub != markDir
	}
	return isLevelOrMark(rel)
}

// sessionObjects lists everything under ref's prefix in one listing.
func (s *Store) sessionObjects(ctx context.Context, ref TranscriptRef) (sessionListing, error) {
	sp := sessionPrefix(s.cfg.Prefix, ref)
	var ls sessionListing
	err := s.cfg.Bucket.List(ctx, bucket.ListOptions{Prefix: sp}, func(oi bucket.ObjectInfo) error {
		s.addListed(&ls, sp, oi)
		return nil
	})
	if err != nil {
		return sessionListing{}, fmt.Errorf("list %s: %w", ref, err)
	}
	s.observe(ref, ls.infos)
	return ls, nil
}

// addListed adds oi, listed under the session prefix sp, to ls.
func (s *Store) addListed(ls *sessionListing, sp string, oi bucket.ObjectInfo) {
	rel := strings.TrimPrefix(oi.Key, sp)
	switch {
	case rel == HeadName:
		ls.strict = true
	case rel == RetentionMarkName:
		ls.retention = &oi
	case isSummaryName(rel):
		// a cache of what a list shows (SummaryName), not part of the session's content
		ls.summary = oi.Key
	case isMarkName(rel):
		ls.marks = append(ls.marks, oi)
	default:
		info, err := ParseKey(s.cfg.Prefix, oi.Key)
		if err != nil {
			ls.stray = append(ls.stray, oi.Key)
			if hidesFolder(rel) {
				ls.hiding = append(ls.hiding, oi.Key)
			}
			return
		}
		info.Size = oi.Size
		ls.infos = append(ls.infos, info)
		if ls.stored == nil {
			ls.stored = map[string]time.Time{}
		}
		ls.stored[oi.Key] = oi.ModTime
		if oi.ModTime.After(ls.newest) {
			ls.newest = oi.ModTime
		}
		if w := earlier(oi.ModTime, info.Time); w.After(ls.written) {
			ls.written = w
		}
	}
}

// CompactAll runs Compact on every session of agent in namespace (every agent of
// the namespace when agent is "") that keep (nil: every one) selects, parallel
// sessions at a time, and calls done with each result, from several goroutines at
// once. One recursive listing finds the sessions and their segments and marks:
// compactions start while the listing goes on, and a session's first attempt sends
// no LIST of its own (a retry after contention lists it again). Sessions without a
// segment are not visited. Every session listed, selected or not, whose prefix
// holds objects named like its folders is passed to opts.Hidden (see
// ErrHiddenSegments), from the listing's goroutine. An error of one session goes
// to done and does not stop the others; CompactAll returns an error only when the
// listing fails or ctx ends.
func (s *Store) CompactAll(ctx context.Context, namespace, agent string, parallel int, opts CompactOptions,
	keep func(TranscriptRef) bool, done func(TranscriptRef, CompactResult, error)) error {
	prefix, lp, visible, err := s.namespaceListing(namespace, agent)
	if err != nil || !visible {
		return err
	}
	type listed struct {
		ref TranscriptRef
		ls  sessionListing
	}
	g, gctx := errgroup.WithContext(ctx)
	work := make(chan listed)
	g.Go(func() error {
		defer close(work)
		return s.listSessions(gctx, namespace, prefix, lp, func(ref TranscriptRef, ls sessionListing) error {
			if len(ls.hiding) > 0 && opts.Hidden != nil {
				opts.Hidden(ref, ls.hiding)
			}
			if len(ls.infos) == 0 || (keep != nil && !keep(ref)) {
				return nil
			}
			s.observe(ref, ls.infos)
			select {
			case work <- listed{ref: ref, ls: ls}:
				return nil
			case <-gctx.Done():
				return gctx.Err()
			}
		})
	})
	for range max(1, parallel) {
		g.Go(func() error {
			for l := range work {
				if gctx.Err() != nil {
					return gctx.Err()
				}
				res, err := s.compact(gctx, l.ref, opts, &l.ls)
				done(l.ref, res, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// listSessions lists everything under lp (the namespace prefix nsPrefix of
// namespace, or one agent's prefix below it) with one recursive listing, and calls
// fn with each session's listing as soon as the listing has moved past the
// session: sessions in key order, every session that holds any object (also one
// without a segment). Keys of a prefix that is not a valid session are skipped. An
// error from fn stops the listing and is returned as is.
func (s *Store) listSessions(ctx context.Context, namespace, nsPrefix, lp string, fn func(TranscriptRef, sessionListing) error) error {
	var cur *TranscriptRef
	var ls sessionListing
	var sp string
	flush := func() error {
		if cur == nil || cur.AgentID == "" {
			return nil
		}
		return fn(*cur, ls)
	}
	err := s.cfg.Bucket.List(ctx, bucket.ListOptions{Prefix: lp}, func(oi bucket.ObjectInfo) error {
		// {agent}/{session}/...: the keys of one session are contiguous.
		parts := strings.SplitN(strings.TrimPrefix(oi.Key, nsPrefix), "/", 3)
		if len(parts) < 3 {
			return nil
		}
		if cur == nil || parts[0] != cur.AgentID || parts[1] != cur.SessionID {
			if err := flush(); err != nil {
				return err
			}
			ref := TranscriptRef{Namespace: namespace, AgentID: parts[0], SessionID: parts[1]}.Norm()
			cur, ls, sp = &ref, sessionListing{}, nsPrefix+parts[0]+"/"+parts[1]+"/"
			if cur.Validate() != nil {
				cur.AgentID = "" // not a session: its keys are skipped
			}
		}
		if cur.AgentID != "" {
			s.addListed(&ls, sp, oi)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("list sessions under %s: %w", lp, err)
	}
	return flush()
}

// earlier returns the earlier of a and b, the other when one is zero.
func earlier(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}
