// Package followmirror wires a follower's ports (follow.Uploader, follow.Store)
// to the async mirror and the store: the one place where the commands that run
// a follower (transcript follow, transcript-bench) name their APIs.
package followmirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

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
// tells, usually with one HEAD, whether the store lost a session
// (follow.SessionChecker).
type Uploader struct {
	m *mirror.Mirror
	s *transcript.Store

	mu sync.Mutex
	// headerAt maps a session (TranscriptRef.String) to the key of a segment
	// the store held with the session's header: a key names the same bytes
	// for good, so while that object is there the header is.
	headerAt map[string]string
	// missing receives when an upload found the bucket missing (nobucket.go).
	missing chan struct{}
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
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	missing := make(chan struct{}, 1)
	m, err := mirror.New(mirror.Config{Store: s, Writer: cfg.Writer, OutboxDir: cfg.OutboxDir, Workers: cfg.Workers,
		BlockWhenFull: true, Logger: slog.New(watchHandler{logger.Handler(), missing})})
	if err != nil {
		return nil, err
	}
	return &Uploader{m: m, s: s, headerAt: map[string]string{}, missing: missing}, nil
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

// SessionExists reports whether the store holds ref's session with its start:
// a segment holding its header. A session of entries without a header (what an
// outbox uploads after the store lost the session's start under it: its bucket
// deleted and created again while later lines waited) counts as lost, so that
// the follower uploads the header and what the session lacks. Once it has
// found the segment holding the header, it asks whether that object is still
// there (one HEAD: a key names the same bytes for good); when it is not (the
// first ask, after a compaction, a wipe), it lists the session once and reads
// its segments, the highest level first, until one holds the header. A store
// that answers "not found" holds nothing.
func (u *Uploader) SessionExists(ctx context.Context, ref transcript.TranscriptRef) (bool, error) {
	name := ref.String()
	u.mu.Lock()
	known := u.headerAt[name]
	u.mu.Unlock()
	if known != "" {
		_, err := u.s.Bucket().Stat(ctx, known)
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, bucket.ErrNotFound) {
			return false, fmt.Errorf("look for the session header of %s: %w", ref, err)
		}
	}
	infos, err := u.s.ListSegments(ctx, ref)
	if errors.Is(err, bucket.ErrNotFound) {
		infos, err = nil, nil
	}
	if err != nil {
		return false, err
	}
	key, err := u.headerSegment(ctx, infos)
	if err != nil {
		return false, err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if key == "" {
		delete(u.headerAt, name)
		return false, nil
	}
	u.headerAt[name] = key
	return true, nil
}

// headerSegment returns the key of a segment of infos that holds a session
// header ("" when none does), reading them the highest level first (a
// compaction's output holds the header of the segments it merged), in key
// order within a level. A segment deleted since the listing (a compaction's
// input) is passed over.
func (u *Uploader) headerSegment(ctx context.Context, infos []transcript.SegmentInfo) (string, error) {
	order := slices.Clone(infos)
	slices.SortStableFunc(order, func(a, b transcript.SegmentInfo) int { return b.Level - a.Level })
	stored := u.s.Stored()
	for _, in := range order {
		seg, err := stored.ReadSegment(ctx, in.Key)
		if errors.Is(err, bucket.ErrNotFound) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("look for the session header: %w", err)
		}
		if slices.ContainsFunc(seg.Entries, func(e []byte) bool { _, err := pi.ParseHeader(e); return err == nil }) {
			return in.Key, nil
		}
	}
	return "", nil
}

// MarkerExists reports whether the store holds the marker of the follower
// named id in namespace ns (one HEAD).
func (u *Uploader) MarkerExists(ctx context.Context, ns, id string) (bool, error) {
	return u.s.FollowerMarkerExists(ctx, ns, id)
}

// PutMarker stores the marker of the follower named id in namespace ns (one
// PUT, straight to the store: the outbox is for sessions).
func (u *Uploader) PutMarker(ctx context.Context, ns, id string, body []byte) error {
	return u.s.PutFollowerMarker(ctx, ns, id, body)
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
