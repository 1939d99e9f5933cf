package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/transcript"
)

// entries answers the entries after sequence number "after" (default 0: from the
// first), at most "limit" of them (default and cap Config.MaxPage), in the
// session's sequence (repository.Session.Page: commit order in strict mode,
// merge order otherwise). Entry n of the sequence has sequence number n, counted
// from 1, so afterEntrySeq of Pi's getEntries maps onto "after" directly and the
// event stream's ids are the same numbers. The page comes from the session's
// handle, brought up to date with what is new in the bucket: reading a session
// page by page reads it once.
func (s *Server) entries(w http.ResponseWriter, r *http.Request, repo *repository.Repository) {
	after, err := queryInt(r, "after", 0)
	if err != nil {
		s.failWith(w, r, http.StatusBadRequest, ErrorDetail{Code: CodeInvalidRequest, Field: "after", Message: err.Error()}, err)
		return
	}
	limit, err := queryInt(r, "limit", s.cfg.MaxPage)
	if err != nil || limit == 0 {
		s.failWith(w, r, http.StatusBadRequest, ErrorDetail{Code: CodeInvalidRequest, Field: "limit", Message: "limit must be a positive integer"}, err)
		return
	}
	limit = min(limit, s.cfg.MaxPage)
	hd, err := s.pageHandle(r.Context(), repo, r.PathValue("id"), after, limit)
	if err != nil {
		s.failStore(w, r, err)
		return
	}
	defer s.sessions.release(hd)
	page := hd.sess.Page(after, limit)
	size := 128 + len(page.Head) // the envelope
	for _, e := range page.Entries {
		size += len(e.Raw()) + 1
	}
	b := bytes.NewBuffer(make([]byte, 0, size))
	b.WriteString(`{"entries":[`)
	for i, e := range page.Entries {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(e.Raw())
	}
	fmt.Fprintf(b, `],"nextSeq":%d,"entryCount":%d,"head":`, min(after, page.Count)+len(page.Entries), page.Count)
	if page.Head == "" {
		b.WriteString("null")
	} else {
		b.Write(pi.AppendString(nil, page.Head))
	}
	b.WriteString("}\n")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	_, _ = w.Write(b.Bytes())
}

// queryInt reads a non-negative integer query parameter.
func queryInt(r *http.Request, name string, def int) (int, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s must be a non-negative integer", name)
	}
	return n, nil
}

// AppendRequest is the body of POST /v1/sessions/{id}/entries.
type AppendRequest struct {
	// ExpectedHead is the head the client last saw (null or absent: no entries).
	// A strict session commits the entries only if it is still the head.
	ExpectedHead *string `json:"expectedHead"`
	// Entries are Pi session entries, each a JSON object with "type" and "id".
	Entries []json.RawMessage `json:"entries"`
}

// AppendResponse is the answer to a successful append.
type AppendResponse struct {
	// Head is the committed head after the append.
	Head *string `json:"head"`
}

// append commits entries at the expected head. An entry whose id is stored with
// the same bytes is skipped, so a retry of a committed append answers 200 with
// the head; other bytes answer 409 entry_conflict; a stale expected head 409
// stale_head with the committed head; a parent (or leaf target) that is not
// stored 422 unknown_parent.
func (s *Server) append(w http.ResponseWriter, r *http.Request, repo *repository.Repository) {
	var req AppendRequest
	if !s.decode(w, r, &req) {
		return
	}
	if len(req.Entries) == 0 {
		s.failWith(w, r, http.StatusBadRequest, ErrorDetail{Code: CodeInvalidRequest, Field: "entries", Message: "no entries"}, nil)
		return
	}
	// Each entry becomes one line; the repository checks them (once, on their
	// way to the store) and names a refused one by its index.
	raws := make([][]byte, len(req.Entries))
	for i, raw := range req.Entries {
		raws[i] = pi.CompactJSON(raw)
	}
	hd, _, err := s.openHandle(r.Context(), repo, r.PathValue("id"))
	if err != nil {
		s.failStore(w, r, err)
		return
	}
	defer s.sessions.release(hd)
	sess := hd.sess
	expected := ""
	if req.ExpectedHead != nil {
		expected = *req.ExpectedHead
	}
	if sess.Strict() {
		err = sess.AppendIf(r.Context(), expected, raws...)
	} else {
		err = sess.Append(r.Context(), raws...)
	}
	if err != nil && !errors.Is(err, transcript.ErrConflict) {
		s.sessions.drop(hd.key) // the next request starts from a fresh read
	}
	switch {
	case err == nil:
		hd.changed()
		writeJSON(w, http.StatusOK, AppendResponse{Head: headPtr(sess.Head())})
	case errors.Is(err, repository.ErrStaleHead):
		// The handle read the head to find it stale, or lost the head's race; a
		// refresh reads what was committed since, not the whole session.
		s.metrics.conflicts.WithLabelValues(string(CodeStaleHead)).Inc()
		d := ErrorDetail{Code: CodeStaleHead, Message: "the expected head is not the committed head"}
		if rerr := hd.refresh(r.Context()); rerr == nil {
			d.Head = headPtr(sess.Head())
		}
		s.failWith(w, r, http.StatusConflict, d, err)
	default:
		s.failStore(w, r, err) // entry_conflict and unknown_parent name the entry
	}
}
