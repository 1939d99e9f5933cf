package server

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/transcript"
)

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
	body, ok := s.readAppendBody(w, r)
	if !ok {
		return
	}
	if len(body.entries) == 0 {
		s.failWith(w, r, http.StatusBadRequest, ErrorDetail{Code: CodeInvalidRequest, Field: "entries", Message: "no entries"}, nil)
		return
	}
	// The repository checks the entries (once, on their way to the store: the
	// body was not checked as JSON whole, see appendbody.go), names a refused
	// one by its index, and keeps them: they are slices of this request's body.
	hd, _, err := s.openHandle(r.Context(), repo, r.PathValue("id"))
	if err != nil {
		if !body.refused(s, w, r) {
			s.failStore(w, r, err)
		}
		return
	}
	defer s.sessions.release(hd)
	sess := hd.sess
	head := ""
	if body.expected != nil {
		head = *body.expected
	}
	err = sess.AppendOwned(r.Context(), head, body.entries)
	if err != nil && body.refused(s, w, r) {
		return // refused before anything was read or stored (see appendbody.go)
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
