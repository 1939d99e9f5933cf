// Package followmirror wires a follower's ports (follow.Uploader, follow.Store)
// to the async mirror and the store: the one place where the commands that run
// a follower (transcript follow, transcript-bench) name their APIs.
package followmirror

import (
	"context"
	"errors"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/transcriptstore/transcript/follow"
	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// Uploader hands a follower's lines to a mirror's outbox, and reads what the
// outbox and the store hold. It is a follow.Uploader and a follow.Store that
// tells, with one listing, whether the store lost a session
// (follow.SessionChecker).
type Uploader struct {
	m *mirror.Mirror
	s *transcript.Store
}

var (
	_ follow.ParsedUploader = (*Uploader)(nil)
	_ follow.Store          = (*Uploader)(nil)
	_ follow.SessionChecker = (*Uploader)(nil)
)

// Config configures Open. Writer and OutboxDir are required.
type Config struct {
	// Writer names the process in segment keys.
	Writer *transcript.Writer
	// OutboxDir is the mirror's outbox: a persistent local directory, kept
	// with the follower's state.
	OutboxDir string
	// Workers is the number of concurrent uploads (0: the mirror's default).
	Workers int
	// Logger receives the mirror's upload failures (nil discards them).
	Logger *slog.Logger
}

// Open starts a mirror on cfg.OutboxDir that uploads to s (first what a
// previous process left in the outbox). Upload blocks while the outbox is full.
// The caller must Close it.
func Open(s *transcript.Store, cfg Config) (*Uploader, error) {
	m, err := mirror.New(mirror.Config{Store: s, Writer: cfg.Writer, OutboxDir: cfg.OutboxDir, Workers: cfg.Workers,
		BlockWhenFull: true, Logger: cfg.Logger})
	if err != nil {
		return nil, err
	}
	return &Uploader{m: m, s: s}, nil
}

// Upload hands entries to the outbox as one segment of ref; it returns once
// they are durable there.
func (u *Uploader) Upload(ctx context.Context, ref transcript.TranscriptRef, entries [][]byte) error {
	return u.m.Upload(ctx, sessiontree.Batch{Ref: ref, Entries: entries})
}

// UploadParsed is Upload of entries whose links the follower read (links[i]
// is pi.ParseLinks of entries[i]): the mirror describes the segment with them
// instead of parsing every line again.
func (u *Uploader) UploadParsed(ctx context.Context, ref transcript.TranscriptRef, entries [][]byte, links []pi.Links) error {
	return u.m.Upload(ctx, sessiontree.Batch{Ref: ref, Entries: entries, Links: links})
}

// Pending returns the entries of ref the outbox holds and the store may not.
func (u *Uploader) Pending(ctx context.Context, ref transcript.TranscriptRef) ([][]byte, error) {
	return u.m.PendingEntries(ctx, ref)
}

// Entries returns the entries of ref the store holds: none, and no error, for
// a session the store does not have.
func (u *Uploader) Entries(ctx context.Context, ref transcript.TranscriptRef) ([][]byte, error) {
	res, err := u.s.ReadAll(ctx, ref)
	if errors.Is(err, bucket.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return res.Raw(), nil
}

// SessionExists reports whether the store holds anything of ref (a segment or
// a head); a store that answers "not found" holds nothing.
func (u *Uploader) SessionExists(ctx context.Context, ref transcript.TranscriptRef) (bool, error) {
	ok, err := u.s.SessionExists(ctx, ref)
	if errors.Is(err, bucket.ErrNotFound) {
		return false, nil
	}
	return ok, err
}

// HoldsNone reports whether the store holds no session at all (no namespace
// under its prefix): its bucket or prefix was emptied.
func (u *Uploader) HoldsNone(ctx context.Context) (bool, error) {
	ns, err := u.s.ListNamespaces(ctx)
	return len(ns) == 0, err
}

// Await waits until everything handed over is uploaded, or ctx ends; it fails
// when the store refused a segment for good.
func (u *Uploader) Await(ctx context.Context) error { return u.m.AwaitQuiescence(ctx) }

// Close stops the mirror after waiting, until ctx ends, for its uploads; what
// is left stays in the outbox for the next process.
func (u *Uploader) Close(ctx context.Context) error { return u.m.Close(ctx) }

// PendingSegments is the number of segments the outbox holds that the store
// may lack.
func (u *Uploader) PendingSegments() int { return u.m.Status().Pending }

// Collector is the mirror's metrics.
func (u *Uploader) Collector() prometheus.Collector { return u.m.Collector() }
