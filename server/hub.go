package server

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/transcriptstore/transcript/transcript/bucket"
)

// hub is the one watcher of a session on this server, shared by all the
// session's event streams: every Config.WatchInterval it brings the session's
// handle up to date with the bucket (one incremental read, whatever the number of
// streams: see cachedSession.refresh) and signals the streams when the session
// changed. Appends through this server signal them at once (cachedSession.changed).
// A signal carries nothing: each stream reads what it has not sent from the
// handle, so a slow stream never holds the others up. The hub stops when its last
// stream leaves, or when the server ends its streams.
type hub struct {
	hd     *cachedSession
	cancel context.CancelFunc

	mu   sync.Mutex
	subs map[chan struct{}]struct{}
	// err is why the session can no longer be watched (it was deleted).
	err error
}

// streams is the server's accounting of its event streams and their hubs.
type streams struct {
	ctx  context.Context // ended by end: every stream and hub stops
	end  context.CancelFunc
	hubs sync.WaitGroup

	mu      sync.Mutex
	open    int
	byOwner map[string]int
}

func newStreams() *streams {
	ctx, cancel := context.WithCancel(context.Background())
	return &streams{ctx: ctx, end: cancel, byOwner: map[string]int{}}
}

// wait waits for the hubs to stop (after end, and after their streams left).
func (st *streams) wait() { st.hubs.Wait() }

// watch subscribes to the hub of hd, starting one when there is none. The
// returned channel receives a signal (coalesced) whenever the session changed or
// its hub failed (hub.failure); stop ends the subscription.
func (s *Server) watch(hd *cachedSession) (sig <-chan struct{}, h *hub, stop func()) {
	ch := make(chan struct{}, 1)
	hd.hubMu.Lock()
	h = hd.hub
	if h == nil {
		ctx, cancel := context.WithCancel(s.streams.ctx)
		h = &hub{hd: hd, cancel: cancel, subs: map[chan struct{}]struct{}{}}
		hd.hub = h
		s.streams.hubs.Add(1)
		s.metrics.watched.Inc()
		go func() {
			defer s.streams.hubs.Done()
			defer s.metrics.watched.Dec()
			h.run(ctx, s.cfg.WatchInterval, s.cfg.RequestTimeout, s.cfg.Logger)
		}()
	}
	h.mu.Lock()
	h.subs[ch] = struct{}{}
	h.mu.Unlock()
	hd.hubMu.Unlock()
	return ch, h, func() {
		hd.hubMu.Lock()
		defer hd.hubMu.Unlock()
		h.mu.Lock()
		delete(h.subs, ch)
		last := len(h.subs) == 0
		h.mu.Unlock()
		if last {
			h.cancel()
			if hd.hub == h {
				hd.hub = nil
			}
		}
	}
}

// run refreshes the handle every interval until ctx ends or the session is gone.
func (h *hub) run(ctx context.Context, interval, timeout time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, timeout)
		err := h.hd.refresh(rctx)
		cancel()
		switch {
		case err == nil || ctx.Err() != nil:
		case errors.Is(err, bucket.ErrNotFound):
			h.hd.hubMu.Lock()
			if h.hd.hub == h {
				h.hd.hub = nil // a stream that comes later watches anew
			}
			h.hd.hubMu.Unlock()
			h.fail(err)
			return
		default:
			// The bucket failed this time (unreachable, slow): the streams stay
			// open, and the next tick tries again.
			log.LogAttrs(ctx, slog.LevelWarn, "watch", slog.String("session", h.hd.key.id), slog.String("error", err.Error()))
		}
	}
}

// notify signals every stream of the hub.
func (h *hub) notify() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs {
		select {
		case ch <- struct{}{}:
		default: // a signal is pending already
		}
	}
}

// fail records why the session can no longer be watched and signals the streams.
func (h *hub) fail(err error) {
	h.mu.Lock()
	h.err = err
	h.mu.Unlock()
	h.notify()
}

// failure returns why the session can no longer be watched, or nil.
func (h *hub) failure() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// admit counts a new stream of owner (its namespace), or answers why not: the
// owner's streams, or the server's, are at their bound, or the server is
// shutting down. The returned function ends the count.
func (s *Server) admit(owner string) (release func(), status int, code ErrorCode, msg string) {
	st := s.streams
	st.mu.Lock()
	defer st.mu.Unlock()
	switch {
	case st.ctx.Err() != nil:
		return nil, 503, CodeUnavailable, "the server is shutting down; reconnect (with Last-Event-ID) to another"
	case st.byOwner[owner] >= s.cfg.MaxStreamsPerOwner:
		return nil, 429, CodeTooManyStreams, "too many open event streams for this owner; close one or retry later"
	case st.open >= s.cfg.MaxStreams:
		return nil, 503, CodeUnavailable, "the server has too many open event streams; retry later"
	}
	st.open++
	st.byOwner[owner]++
	s.metrics.streams.Inc()
	return func() {
		st.mu.Lock()
		defer st.mu.Unlock()
		st.open--
		if st.byOwner[owner]--; st.byOwner[owner] == 0 {
			delete(st.byOwner, owner)
		}
		s.metrics.streams.Dec()
	}, 0, "", ""
}
