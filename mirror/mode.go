package mirror

import (
	"context"
	"fmt"
)

// Mode selects how flushed batches reach the bucket.
type Mode string

const (
	// ModeSegments (the default) is the asynchronous segment Mirror.
	ModeSegments Mode = "segments"
	// ModeLegacy is the full-file mirror, Legacy.
	ModeLegacy Mode = "legacy"
)

// ParseMode parses "segments" or "legacy"; "" gives ModeSegments.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case "", ModeSegments:
		return ModeSegments, nil
	case ModeLegacy:
		return ModeLegacy, nil
	}
	return "", fmt.Errorf("mirror: unknown mode %q (want %q or %q)", s, ModeSegments, ModeLegacy)
}

// Remote is an Uploader with a life cycle, as Open returns it.
type Remote interface {
	Uploader
	// AwaitQuiescence blocks until everything uploaded before the call is stored,
	// or ctx ends.
	AwaitQuiescence(ctx context.Context) error
	// Close stops accepting batches and drains what it can until ctx ends.
	Close(ctx context.Context) error
}

var (
	_ Remote = (*Mirror)(nil)
	_ Remote = (*Legacy)(nil)
)

// Open returns the Remote that cfg.Mode selects: New(cfg) for ModeSegments; for
// ModeLegacy a Legacy over cfg.Store's bucket with the key prefix
// "{store prefix}/legacy" (Writer and OutboxDir are then not used).
func Open(cfg Config) (Remote, error) {
	mode, err := ParseMode(string(cfg.Mode))
	if err != nil {
		return nil, err
	}
	if mode == ModeLegacy {
		if cfg.Store == nil {
			return nil, fmt.Errorf("mirror: config: no store")
		}
		prefix := "legacy"
		if p := cfg.Store.Prefix(); p != "" {
			prefix = p + "/" + prefix
		}
		return &Legacy{Bucket: cfg.Store.Bucket(), Prefix: prefix}, nil
	}
	return New(cfg)
}
