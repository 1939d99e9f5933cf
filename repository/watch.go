package repository

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// Watch calls fn with the entries that other writers commit to the session, until
// ctx ends (it then returns ctx's error), fn returns an error (returned as is), or
// reading the store fails. Entries this handle already knows, and entries of
// segments written under the repository's own writer id, are not delivered; each
// entry is delivered once.
//
// Watch polls every Config.WatchInterval and runs no goroutine of its own. In
// default mode each poll lists the newest keys of the session (the whole session
// on the first poll and then every watchReconcile, at least)
// and reads only the segments it does not hold yet (transcript.Store.ReadNew). No
// completeness rests on key time: a segment that lands late with an old key (an
// outbox that waited, a writer whose clock is off by hours) is delivered by the
// next full listing; each call of fn gets the new entries in merge order (parents
// first).
// In strict mode it reads the head object and delivers only committed entries, in
// commit order. A session deleted while watched ends the watch with bucket.ErrNotFound
// (strict mode; in default mode a deleted session just stops delivering).
func (s *Session) Watch(ctx context.Context, fn func([]pi.Entry) error) error {
	if !s.asOf.IsZero() {
		return fmt.Errorf("watch session %q: %w", s.id, ErrReadOnly)
	}
	s.mu.Lock()
	byID := s.index()
	w := &watcher{
		s:      s,
		strict: s.strict,
		hs:     s.hs,
		known:  make(map[string]bool, len(byID)),
		have:   s.have.With(), // a copy: the handle's set goes on without the watch
	}
	for id := range byID {
		w.known[id] = true
	}
	s.mu.Unlock()

	t := time.NewTicker(s.repo.cfg.WatchInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		batch, err := w.poll(ctx)
		if err != nil {
			return fmt.Errorf("watch session %q: %w", s.id, err)
		}
		if len(batch) > 0 {
			if err := fn(batch); err != nil {
				return err
			}
		}
	}
}

// watcher is the state of one Watch.
type watcher struct {
	s      *Session
	strict bool
	hs     transcript.Head       // strict: the head delivered so far
	known  map[string]bool       // entry ids known or delivered
	have   transcript.SegmentSet // default: the segments whose entries are known
	// fullAt is when the default mode last listed the whole session.
	fullAt time.Time
}

// watchReconcile is how often a Watch in default mode lists the whole session, so
// that a segment landing late below the incremental listing's start (an outbox
// that waited, a writer whose clock is off by hours) is delivered within seconds,
// sooner than the store's ReconcilePolicy would find it for a SessionTree.
const watchReconcile = 5 * time.Second

func (w *watcher) poll(ctx context.Context) ([]pi.Entry, error) {
	if w.strict {
		return w.pollHead(ctx)
	}
	return w.pollList(ctx)
}

// pollList reads the segments the watch does not hold yet. A session that is
// gone delivers nothing.
func (w *watcher) pollList(ctx context.Context) ([]pi.Entry, error) {
	r := w.s.repo
	if now := time.Now(); now.Sub(w.fullAt) >= watchReconcile {
		w.have = w.have.Reconcile()
		w.fullAt = now
	}
	inc, err := r.store.ReadNew(ctx, w.s.ref, w.have)
	if errors.Is(err, bucket.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	w.have = inc.Have
	return w.deliver(inc.Entries), nil
}

// pollHead reads the segments committed since the head delivered so far
// (transcript.Store.ReadCommitted: a compacted segment that holds only what the
// watch holds is not read) and delivers their entries in commit order.
func (w *watcher) pollHead(ctx context.Context) ([]pi.Entry, error) {
	r := w.s.repo
	hs, err := r.store.ReadHeadSince(ctx, w.s.ref, w.hs)
	if errors.Is(err, bucket.ErrNotFound) {
		return nil, notFound(w.s.id)
	}
	if err != nil {
		return nil, headError(err)
	}
	if hs.Same(w.hs) {
		return nil, nil
	}
	hs, inc, err := r.store.ReadCommitted(ctx, w.s.ref, hs, w.have)
	if errors.Is(err, bucket.ErrNotFound) {
		return nil, notFound(w.s.id)
	}
	if err != nil {
		return nil, headError(err)
	}
	if len(inc.Missing) > 0 {
		return nil, fmt.Errorf("%w: the head names %s, which is missing", ErrHeadMismatch, inc.Missing[0])
	}
	out := w.deliver(hs.Replay(inc.Entries))
	w.hs, w.have = hs, inc.Have
	return out, nil
}

// deliver returns the entries new to the watch, in the order given, that were
// first stored by another writer than the repository's, and marks them known.
func (w *watcher) deliver(entries []transcript.Entry) []pi.Entry {
	r := w.s.repo
	var out []pi.Entry
	for _, e := range entries {
		if w.known[e.ID] {
			continue
		}
		w.known[e.ID] = true
		if info, err := transcript.ParseKey(r.store.Prefix(), w.s.prefix+e.Origin.Key); err == nil && info.WriterID == r.writer.ID() {
			continue // written by this repository
		}
		if se, err := pi.ParseEntry(e.Raw); err == nil {
			out = append(out, se)
		}
	}
	return out
}
