package repository

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// Defaults and bounds of ListOptions.Limit.
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
)

// ListOptions select a page of an owner's sessions.
type ListOptions struct {
	// Cwd lists only sessions whose header cwd equals it ("" = all).
	Cwd string
	// After is the cursor: the Next of the previous page ("" = from the start).
	After string
	// Limit bounds the sessions of the page (0 = DefaultListLimit; at most
	// MaxListLimit).
	Limit int
}

// ListPage is a page of an owner's sessions.
type ListPage struct {
	// Sessions are ordered by session id, so that the cursor works.
	Sessions []SessionInfo
	// Next is the cursor of the next page; "" when there is none.
	Next string
}

// ListPage lists a page of the owner's sessions from their summaries, without
// reading the sessions: one delimited LIST of the owner's session prefixes, then,
// in parallel, one GET per session of its strict head (which carries the
// session's summary, transcript.Head.Summary) or, for a default-mode session
// (one the command line, a SessionTree or follow wrote), of its summary object
// and one LIST of its segments to tell whether the summary is current
// (transcript.Store.SegmentsTag). A default-mode session whose summary is missing
// or out of date, and a strict session whose head has none (format 1), is read
// once to derive it; the derived summary of a default-mode session is stored for
// the next list (best effort: a list by a role that may not write still
// answers).
//
// Sessions come in id order; those after opts.After whose cwd is opts.Cwd (any,
// when empty) fill the page up to opts.Limit. Sessions deleted meanwhile, and
// prefixes that are not repository sessions, are left out.
func (r *Repository) ListPage(ctx context.Context, opts ListOptions) (ListPage, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)
	ids, err := r.store.ListSessions(ctx, r.ns, r.cfg.AgentID)
	if err != nil {
		return ListPage{}, fmt.Errorf("list sessions: %w", err)
	}
	ids = slices.DeleteFunc(ids, func(id string) bool {
		return ValidateID(id) != nil || opts.After != "" && id <= opts.After
	})
	slices.SortFunc(ids, strings.Compare)
	var page ListPage
	for len(ids) > 0 && len(page.Sessions) < limit {
		batch := ids[:min(len(ids), limit-len(page.Sessions))]
		infos, err := r.summaries(ctx, batch)
		if err != nil {
			return ListPage{}, fmt.Errorf("list sessions: %w", err)
		}
		for _, info := range infos {
			if info != nil && (opts.Cwd == "" || info.Cwd == opts.Cwd) {
				page.Sessions = append(page.Sessions, *info)
			}
		}
		ids = ids[len(batch):]
		if len(ids) > 0 && len(page.Sessions) == limit {
			page.Next = batch[len(batch)-1]
		}
	}
	return page, nil
}

// summaries returns the metadata of sessions ids (nil for one that is gone),
// ListConcurrency at a time.
func (r *Repository) summaries(ctx context.Context, ids []string) ([]*SessionInfo, error) {
	out := make([]*SessionInfo, len(ids))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.cfg.ListConcurrency)
	for i, id := range ids {
		g.Go(func() error {
			info, err := r.summary(gctx, id)
			if errors.Is(err, bucket.ErrNotFound) {
				return nil
			}
			out[i] = info
			return err
		})
	}
	return out, g.Wait()
}

// summary returns the metadata of session id from its head or summary object,
// deriving it from the session when there is none or it is out of date.
func (r *Repository) summary(ctx context.Context, id string) (*SessionInfo, error) {
	s, err := r.newSession(id)
	if err != nil {
		return nil, err
	}
	s.infoOnly = true // a summary needs no payload: none is fetched
	hs, err := r.store.ReadHead(ctx, s.ref)
	switch {
	case err == nil && hs.Summary != nil:
		info := infoOf(id, *hs.Summary, hs.Entry)
		info.Strict = true
		return &info, nil
	case err == nil:
		return r.derived(ctx, s) // a head of format 1
	case errors.Is(err, transcript.ErrInvalidHead):
		// A damaged head: the session is listed by its id alone (Open says
		// what is wrong), rather than failing the owner's whole list.
		return &SessionInfo{ID: id, Strict: true}, nil
	case !errors.Is(err, bucket.ErrNotFound):
		return nil, fmt.Errorf("session %q: %w", id, err)
	}
	tag, strict, n, err := r.store.SegmentsTag(ctx, s.ref)
	switch {
	case err != nil:
		return nil, fmt.Errorf("session %q: %w", id, err)
	case strict:
		return r.derived(ctx, s) // its head appeared since it was read: read the session
	case n == 0:
		return nil, notFound(id)
	}
	cs, err := r.store.ReadSummary(ctx, s.ref)
	if err == nil && cs.Tag == tag {
		info := infoOf(id, cs.Summary, cs.Leaf)
		return &info, nil
	}
	if err != nil && !errors.Is(err, bucket.ErrNotFound) && !errors.Is(err, transcript.ErrInvalidHead) {
		return nil, fmt.Errorf("session %q: %w", id, err)
	}
	info, err := r.derived(ctx, s)
	if err != nil || info.Strict {
		return info, err
	}
	// Best effort: the summary is a cache, and a role that may not write still lists.
	_ = r.store.WriteSummary(ctx, s.ref, transcript.CachedSummary{Summary: summaryOf(*info), Leaf: info.Leaf, Tag: tag})
	return info, nil
}

// derived reads session s whole and returns its metadata.
func (r *Repository) derived(ctx context.Context, s *Session) (*SessionInfo, error) {
	if err := s.load(ctx); err != nil {
		return nil, err
	}
	info := s.info()
	return &info, nil
}

// infoOf returns the metadata of session id as sum records it, with active leaf
// leaf.
func infoOf(id string, sum transcript.Summary, leaf string) SessionInfo {
	return SessionInfo{ID: id, Name: sum.Name, Created: sum.Created, Updated: sum.Updated, Entries: sum.Entries,
		Leaf: leaf, ParentSession: sum.ParentSession, Cwd: sum.Cwd}
}

// summaryOf returns what a summary records of info.
func summaryOf(info SessionInfo) transcript.Summary {
	return transcript.Summary{Created: info.Created, Updated: info.Updated, Cwd: info.Cwd,
		ParentSession: info.ParentSession, Name: info.Name, Entries: info.Entries}
}
