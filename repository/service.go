package repository

import (
	"context"
	"errors"
	"fmt"

	"github.com/transcriptstore/transcript/transcript"
)

// Service is the repository layer over one store for any number of owners: it
// binds a Repository to each owner it is asked for (Repository), with one
// configuration, and answers whether the store can be reached (Ready). A server
// holds one and never touches the store itself. It is safe for concurrent use.
type Service struct {
	store *transcript.Store
	cfg   Config
}

// NewService returns the service of store with the repositories' configuration
// cfg (its zero fields take New's defaults). store must not be bound to a
// namespace: each repository binds it to its owner's.
func NewService(store *transcript.Store, cfg Config) (*Service, error) {
	if store == nil {
		return nil, errors.New("repository: nil store")
	}
	if cfg.AgentID == "" {
		cfg.AgentID = DefaultAgentID
	}
	if err := transcript.ValidatePart("agent id", cfg.AgentID); err != nil {
		return nil, fmt.Errorf("repository: %w: %w", ErrInvalid, err)
	}
	return &Service{store: store, cfg: cfg}, nil
}

// Repository returns the repository of owner (see New). Close it when done.
func (s *Service) Repository(owner Owner) (*Repository, error) {
	return New(s.store, owner, s.cfg)
}

// AgentID returns the agent id of the repositories' sessions.
func (s *Service) AgentID() string { return s.cfg.AgentID }

// Ready reports whether the store's bucket answers (transcript.Store.Ping); a
// bucket that cannot be reached gives an error wrapping bucket.ErrUnavailable.
func (s *Service) Ready(ctx context.Context) error { return s.store.Ping(ctx) }
