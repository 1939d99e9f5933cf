package repository

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/transcriptstore/transcript/transcript/bucket"
	"golang.org/x/sync/errgroup"
)

// Open opens the session id. A session that does not exist, or is another
// owner's, gives an error wrapping bucket.ErrNotFound. A strict session whose stored
// head does not match its committed entries opens, but refuses appends (see
// Session.Err).
func (r *Repository) Open(ctx context.Context, id string) (*Session, error) {
	s, err := r.newSession(id)
	if err != nil {
		return nil, err
	}
	if err := s.load(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// List returns the metadata of every session of the owner and agent, in id order.
// It reads each session whole, but none of their payloads (large images and tool
// outputs the store keeps outside the segments); sessions deleted meanwhile are
// left out.
func (r *Repository) List(ctx context.Context) ([]SessionInfo, error) {
	ids, err := r.store.ListSessions(ctx, r.ns, r.cfg.AgentID)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	infos := make([]SessionInfo, len(ids))
	found := make([]bool, len(ids))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.cfg.ListConcurrency)
	for i, id := range ids {
		if ValidateID(id) != nil {
			continue // not a repository session
		}
		g.Go(func() error {
			s, err := r.newSession(id)
			if err != nil {
				return err
			}
			s.infoOnly = true // no payload is fetched for the list
			err = s.load(gctx)
			if errors.Is(err, bucket.ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			infos[i], found[i] = s.info(), true
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	out := make([]SessionInfo, 0, len(ids))
	for i, ok := range found {
		if ok {
			out = append(out, infos[i])
		}
	}
	return out, nil
}

// OpenAsOf opens session id read-only as it was at time t: only segments created
// at or before t are read (by the time in their keys). In strict mode only
// committed ones, and the head is the one computed from them. A session without
// segments by then gives bucket.ErrNotFound.
func (r *Repository) OpenAsOf(ctx context.Context, id string, t time.Time) (*Session, error) {
	s, err := r.newSession(id)
	if err != nil {
		return nil, err
	}
	s.asOf = t.UTC()
	if err := s.load(ctx); err != nil {
		return nil, err
	}
	return s, nil
}
