package repository

// TEMPORARY: this file is replaced by the metadata-based implementation of
// ListPage (a small metadata object per session, read without reading the
// session). Until then ListPage is a thin function over List, which reads every
// session whole; its contract (options, order, cursor) is the one the
// replacement keeps.

import (
	"context"
	"slices"
	"strings"
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

// ListPage lists the owner's sessions from their metadata only.
func (r *Repository) ListPage(ctx context.Context, opts ListOptions) (ListPage, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)
	all, err := r.List(ctx)
	if err != nil {
		return ListPage{}, err
	}
	slices.SortFunc(all, func(a, b SessionInfo) int { return strings.Compare(a.ID, b.ID) })
	var page ListPage
	for _, info := range all {
		if info.ID <= opts.After && opts.After != "" || opts.Cwd != "" && info.Cwd != opts.Cwd {
			continue
		}
		if len(page.Sessions) == limit {
			page.Next = page.Sessions[limit-1].ID
			break
		}
		page.Sessions = append(page.Sessions, info)
	}
	return page, nil
}
