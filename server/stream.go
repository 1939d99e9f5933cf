package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/transcriptstore/transcript/repository"
)

// StreamRetryMillis is the reconnection delay an event stream asks of its
// client (the "retry" field of Server-Sent Events).
const StreamRetryMillis = 1000

// events streams the session's committed entries as Server-Sent Events, in
// sequence order, from sequence number "after" (or the Last-Event-ID header a
// reconnecting client sends, which wins): each entry is one event whose id is
// its sequence number and whose data is the entry's JSON. It sends what the
// session holds, then each entry as it is committed (through this server at
// once, through others within Config.WatchInterval), and a comment every
// Config.Heartbeat while idle. A stream ends with an event "reset" when the
// session's sequence changed under it (a default-mode session took a segment
// that sorts before entries already sent, or the session was created anew; the
// client reads the session again), an event "error" (the error envelope) when
// the session was deleted, or without an event when the server shuts down. A
// damaged strict session's stream sends an event "damaged" (data
// {"damaged":REASON}, no id, so that Last-Event-ID stays the last entry's)
// before its entries, and again when the reason changes.
func (s *Server) events(w http.ResponseWriter, r *http.Request, repo *repository.Repository) {
	after, field, err := streamStart(r)
	if err != nil {
		s.failWith(w, r, http.StatusBadRequest, ErrorDetail{Code: CodeInvalidRequest, Field: field, Message: err.Error()}, err)
		return
	}
	release, status, code, msg := s.admit(repo.Namespace())
	if release == nil {
		s.fail(w, r, status, code, msg, nil)
		return
	}
	defer release()
	ctx := r.Context()
	rctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	hd, err := s.current(rctx, repo, r.PathValue("id"))
	cancel()
	if err != nil {
		s.failStore(w, r, err)
		return
	}
	defer s.sessions.release(hd)
	sig, h, stop := s.watch(hd)
	defer stop()

	st := newSSEWriter(w, s.cfg.RequestTimeout)
	st.header(fmt.Sprintf("retry: %d\n\n", StreamRetryMillis))
	epoch := hd.sess.Page(0, 0).Epoch
	beat := time.NewTicker(s.cfg.Heartbeat)
	defer beat.Stop()
	damaged := ""
	for sent := after; ; {
		if d := damagedOf(hd.sess); d != "" && d != damaged {
			damaged = d
			if !st.event("damaged", map[string]string{"damaged": d}) {
				return
			}
		}
		if !s.sendNew(st, hd.sess, &sent, epoch) {
			return
		}
		st.idle()
		select {
		case <-ctx.Done():
			return
		case <-s.streams.ctx.Done():
			st.comment("the server is shutting down")
			return
		case <-beat.C:
			if !st.comment("ping") {
				return
			}
		case <-sig:
			if err := h.failure(); err != nil {
				st.event("error", ErrorBody{Error: ErrorDetail{Code: CodeNotFound, Message: "session not found"}})
				return
			}
		}
	}
}

// sendNew sends the entries after *sent that the handle holds, advancing
// *sent; false when the stream must end (a write failed, or the sequence
// changed: it then sent "reset").
func (s *Server) sendNew(st *sseWriter, sess *repository.Session, sent *int, epoch uint64) bool {
	for {
		p := s.boundPage(sess.Page(*sent, s.cfg.MaxPage))
		if p.Epoch != epoch || *sent > p.Count {
			st.event("reset", map[string]int{"entryCount": p.Count})
			return false
		}
		if len(p.Entries) == 0 {
			return true
		}
		for i, e := range p.Entries {
			st.entry(*sent+i+1, e.Raw())
			// Written a chunk at a time (pageChunk): a stream whose client
			// reads slowly, or not at all, holds that much, not a page.
			if st.buf.Len() >= pageChunk && !st.write() {
				return false
			}
		}
		*sent += len(p.Entries)
		s.metrics.events.Add(float64(len(p.Entries)))
		if !st.flush() {
			return false
		}
	}
}

// streamStart returns the sequence number a stream starts after: Last-Event-ID
// when the client sent one, else the query parameter "after" (default 0). field
// names the one at fault in an error.
func streamStart(r *http.Request) (after int, field string, err error) {
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, "Last-Event-ID", fmt.Errorf("Last-Event-ID must be a non-negative integer (an event id), not %q", v)
		}
		return n, "", nil
	}
	n, err := queryInt(r, "after", 0)
	return n, "after", err
}

// sseWriter writes Server-Sent Events to a response, each write bounded by a
// deadline of its own (a client that stops reading ends its stream).
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	buf     bytes.Buffer
	err     error
}

func newSSEWriter(w http.ResponseWriter, timeout time.Duration) *sseWriter {
	return &sseWriter{w: w, rc: http.NewResponseController(w), timeout: timeout}
}

// header sends the response's header and first lines. A stream is read for as
// long as it lasts: the server's read timeout, which would end it, is lifted.
func (st *sseWriter) header(first string) {
	h := st.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // proxies (nginx) pass events on at once
	_ = st.rc.SetReadDeadline(time.Time{})
	st.w.WriteHeader(http.StatusOK)
	st.buf.WriteString(first)
	st.flush()
}

// entry buffers the event of one entry. An entry is one line of JSON; one that
// holds a line break (only possible between JSON tokens) is compacted.
func (st *sseWriter) entry(seq int, raw []byte) {
	if bytes.ContainsAny(raw, "\r\n") {
		var b bytes.Buffer
		if json.Compact(&b, raw) == nil {
			raw = b.Bytes()
		}
	}
	fmt.Fprintf(&st.buf, "id: %d\ndata: ", seq)
	st.buf.Write(raw)
	st.buf.WriteString("\n\n")
}

// event sends a named event whose data is v's JSON.
func (st *sseWriter) event(name string, v any) bool {
	data, err := json.Marshal(v)
	if err != nil {
		return false
	}
	fmt.Fprintf(&st.buf, "event: %s\ndata: %s\n\n", name, data)
	return st.flush()
}

// comment sends a comment (a heartbeat, or a word before the stream ends).
func (st *sseWriter) comment(text string) bool {
	fmt.Fprintf(&st.buf, ": %s\n\n", text)
	return st.flush()
}

// maxIdleSSEBuffer is the largest buffer an idle stream keeps: one that a
// catching-up stream grew to a page (up to Config.MaxPageBytes) is dropped when
// the stream goes idle, as a stream may stay open, idle, for hours.
const maxIdleSSEBuffer = 64 << 10

// idle drops the stream's buffer when it is large: the stream sent what there
// was and waits.
func (st *sseWriter) idle() {
	if st.buf.Cap() > maxIdleSSEBuffer {
		st.buf = bytes.Buffer{}
	}
}

// write writes what is buffered; false once a write failed.
func (st *sseWriter) write() bool {
	if st.err != nil {
		return false
	}
	if st.buf.Len() > 0 {
		_ = st.rc.SetWriteDeadline(time.Now().Add(st.timeout))
		if _, err := st.w.Write(st.buf.Bytes()); err != nil {
			st.err = err
			return false
		}
		st.buf.Reset()
	}
	return true
}

// flush writes what is buffered and flushes it to the client; false once a
// write failed.
func (st *sseWriter) flush() bool {
	if !st.write() {
		return false
	}
	if err := st.rc.Flush(); err != nil {
		st.err = err
		return false
	}
	return true
}
