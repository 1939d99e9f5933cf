package main

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/transcriptstore/transcript/follow"
	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/transcript"
)

// followUploader connects the follower's ports (follow.Uploader, follow.Store)
// to the async mirror and the store. It is the one place where transcript
// follow names their APIs.
type followUploader struct {
	m *mirror.Mirror
	s *transcript.Store
}

var (
	_ follow.Uploader = followUploader{}
	_ follow.Store    = followUploader{}
)

// openFollowUploader starts a mirror on the outbox dir (uploading what a
// previous run left there) that uploads to s as writer w with workers uploads
// at once (0: the mirror's default); logs go to logger.
func openFollowUploader(s *transcript.Store, w *transcript.Writer, dir string, workers int, logger *slog.Logger) (followUploader, error) {
	m, err := mirror.New(mirror.Config{Store: s, Writer: w, OutboxDir: dir, Workers: workers, BlockWhenFull: true, Logger: logger})
	return followUploader{m: m, s: s}, err
}

// Upload hands entries to the mirror's outbox as one segment of ref.
func (u followUploader) Upload(ctx context.Context, ref transcript.TranscriptRef, entries [][]byte) error {
	return u.m.Upload(ctx, mirror.Batch{Ref: ref, Entries: entries})
}

// Pending returns the entries of ref the outbox holds and the store may not.
func (u followUploader) Pending(ctx context.Context, ref transcript.TranscriptRef) ([][]byte, error) {
	return u.m.PendingEntries(ctx, ref)
}

// Entries returns the entries of ref the store holds.
func (u followUploader) Entries(ctx context.Context, ref transcript.TranscriptRef) ([][]byte, error) {
	return u.s.ReadEntries(ctx, ref)
}

// await waits until the mirror uploaded everything handed over, or ctx ends.
func (u followUploader) await(ctx context.Context) error { return u.m.AwaitQuiescence(ctx) }

// close stops the mirror after waiting, until ctx ends, for its uploads; what is
// left stays in the outbox for the next run.
func (u followUploader) close(ctx context.Context) error { return u.m.Close(ctx) }

// pending is the number of segments the outbox holds that the store may lack.
func (u followUploader) pending() int { return u.m.Status().Pending }

// collector is the mirror's metrics.
func (u followUploader) collector() prometheus.Collector { return u.m.Collector() }
