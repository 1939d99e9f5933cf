package repository

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/transcript"
)

// Watch calls fn with the entries that other writers commit to the session, until
// ctx ends (it then returns ctx's error), fn returns an error (returned as is), or
// reading the store fails. Entries this handle already knows, and entries of
// segments written under the repository's own writer id, are not delivered; each
// entry is delivered once.
//
// Watch polls every Config.WatchInterval and runs no goroutine of its own. In
// default mode it lists the segments after a key some Config.WatchMargin older
// than the newest it has seen (keys carry creation time, so a late segment with a
// slightly older key is still found) and reads only segments it has not seen; each
// call of fn gets the new entries parents first, then in key order and position.
// In strict mode it reads the head object and delivers only committed entries, in
// commit order. A session deleted while watched ends the watch with ErrNotFound
// (strict mode; in default mode a deleted session just stops delivering).
func (s *Session) Watch(ctx context.Context, fn func([]pi.Entry) error) error {
	if !s.asOf.IsZero() {
		return fmt.Errorf("watch session %q: %w", s.id, ErrReadOnly)
	}
	s.mu.Lock()
	w := &watcher{
		s:      s,
		strict: s.strict,
		hs:     s.hs,
		known:  make(map[string]bool, len(s.byID)),
		seen:   maps.Clone(s.seen),
	}
	for id := range s.byID {
		w.known[id] = true
	}
	s.mu.Unlock()
	if w.seen == nil {
		w.seen = map[string]bool{}
	}
	for k := range w.seen {
		if info, err := transcript.ParseKey(s.repo.store.Prefix(), k); err == nil && info.Level == 0 {
			w.newest = later(w.newest, info.Time)
		}
	}
	w.advance()

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
	s          *Session
	strict     bool
	hs         headState       // strict: the head delivered so far
	known      map[string]bool // entry ids known or delivered
	seen       map[string]bool // default: segment keys read (those after startAfter)
	newest     time.Time       // default: newest level-0 key time seen
	startAfter string          // default: where the next listing starts
}

func (w *watcher) poll(ctx context.Context) ([]pi.Entry, error) {
	if w.strict {
		return w.pollHead(ctx)
	}
	return w.pollList(ctx)
}

// pollList reads the segments listed after startAfter that were not read yet.
func (w *watcher) pollList(ctx context.Context) ([]pi.Entry, error) {
	r := w.s.repo
	infos, err := r.store.ListSegmentsAfter(ctx, w.s.ref, w.startAfter)
	if err != nil {
		return nil, err
	}
	var out []pi.Entry
	for _, info := range infos {
		if w.seen[info.Key] {
			continue
		}
		entries, err := w.read(ctx, info)
		if err != nil {
			return nil, err
		}
		out = append(out, entries...)
		w.seen[info.Key] = true
		if info.Level == 0 {
			w.newest = later(w.newest, info.Time)
		}
	}
	w.advance()
	return parentsFirst(out), nil
}

// advance moves startAfter to the greatest level-0 key seen that is at least the
// margin older than the newest one, and forgets the keys at or before it (no
// listing returns them again).
func (w *watcher) advance() {
	cutoff := w.newest.Add(-w.s.repo.cfg.WatchMargin)
	prefix := w.s.repo.store.Prefix()
	for k := range w.seen {
		info, err := transcript.ParseKey(prefix, k)
		if err == nil && info.Level == 0 && !info.Time.After(cutoff) && k > w.startAfter {
			w.startAfter = k
		}
	}
	for k := range w.seen {
		if k <= w.startAfter {
			delete(w.seen, k)
		}
	}
}

// pollHead reads the segments committed since the head delivered so far.
func (w *watcher) pollHead(ctx context.Context) ([]pi.Entry, error) {
	r := w.s.repo
	hs, ok, err := r.readHead(ctx, w.s.headKey())
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, notFound(w.s.id)
	}
	if hs.etag == w.hs.etag && hs.Version == w.hs.Version {
		return nil, nil
	}
	var out []pi.Entry
	for _, rel := range hs.Segments {
		if w.hs.names(rel) {
			continue
		}
		info, err := transcript.ParseKey(r.store.Prefix(), w.s.prefix+rel)
		if err != nil {
			return nil, fmt.Errorf("%w: head names %q: %w", ErrHeadMismatch, rel, err)
		}
		entries, err := w.read(ctx, info)
		if err != nil {
			return nil, err
		}
		out = append(out, entries...)
	}
	w.hs = hs
	return out, nil
}

// read returns the entries of one segment that are new to the watch and were
// written by another writer. A vanished segment (compacted) gives none in default
// mode: the segment that replaced it is listed too.
func (w *watcher) read(ctx context.Context, info transcript.SegmentInfo) ([]pi.Entry, error) {
	r := w.s.repo
	seg, err := r.store.ReadSegment(ctx, info.Key)
	if errors.Is(err, transcript.ErrNotFound) && !w.strict {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	own := info.WriterID == r.writer.ID()
	var out []pi.Entry
	for _, raw := range seg.Entries {
		e, err := pi.ParseEntry(raw)
		if err != nil || w.known[e.ID()] {
			continue // the header, or an entry already known
		}
		w.known[e.ID()] = true
		if !own {
			out = append(out, e)
		}
	}
	return out, nil
}

// parentsFirst orders entries so that an entry comes after its parent when both
// are among them, keeping the given order otherwise.
func parentsFirst(entries []pi.Entry) []pi.Entry {
	waiting := make(map[string]bool, len(entries))
	for _, e := range entries {
		waiting[e.ID()] = true
	}
	out := make([]pi.Entry, 0, len(entries))
	for rest := entries; len(rest) > 0; {
		var next []pi.Entry
		for _, e := range rest {
			if p, ok := e.ParentID(); ok && waiting[p] && p != e.ID() {
				next = append(next, e)
				continue
			}
			out = append(out, e)
			delete(waiting, e.ID())
		}
		if len(next) == len(rest) { // a cycle: keep the given order
			return append(out, next...)
		}
		rest = next
	}
	return out
}
