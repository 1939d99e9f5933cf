package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/transcriptstore/transcript/internal/jsonscan"
	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// CreateRequest is the body of POST /v1/sessions.
type CreateRequest struct {
	// ID is the session id; empty for a new random one. Creating an id that
	// exists with the same cwd, strict mode and (when given) name answers the
	// existing session (200), so a retry after a lost response is harmless; with
	// other values it answers 409 exists, naming the field.
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
	Cwd  string `json:"cwd,omitempty"`
	// Strict (default true) keeps a head advanced by conditional writes, so that
	// appends with an expected head are exact.
	Strict *bool `json:"strict,omitempty"`
}

func (s *Server) create(w http.ResponseWriter, r *http.Request, repo *repository.Repository) {
	var req CreateRequest
	data, ok := s.decodeOptional(w, r, &req)
	if !ok {
		return
	}
	req.ID = asSent(data, "id", req.ID)
	if req.ID != "" {
		if err := repository.ValidateID(req.ID); err != nil {
			s.failWith(w, r, http.StatusBadRequest, ErrorDetail{Code: CodeInvalidRequest, Field: "id", Message: err.Error()}, err)
			return
		}
	}
	strict := req.Strict == nil || *req.Strict
	own, err := s.cfg.Repositories.Repository(repo.Owner())
	if err != nil {
		s.failStore(w, r, err)
		return
	}
	sess, err := own.Create(r.Context(), repository.CreateOptions{ID: req.ID, Name: req.Name, Cwd: req.Cwd, Strict: strict})
	if err != nil {
		_ = own.Close()
		if errors.Is(err, bucket.ErrExists) && req.ID != "" {
			s.createAgain(w, r, repo, req, strict)
			return
		}
		s.failStore(w, r, err)
		return
	}
	s.keep(own, sess)
	writeJSON(w, http.StatusCreated, metadataOf(sess.Snapshot()))
}

// createAgain answers a create of a session that exists: the session (200) when
// the request asks for what it holds (a retry), else 409 exists naming the first
// field that differs.
func (s *Server) createAgain(w http.ResponseWriter, r *http.Request, repo *repository.Repository, req CreateRequest, strict bool) {
	hd, err := s.current(r.Context(), repo, req.ID)
	if errors.Is(err, bucket.ErrNotFound) {
		// The create lost to objects that are no session: segments without
		// the session's header (of default-mode appends racing its deletion,
		// repository.Delete) that landed while it created, or a session
		// deleted as it was read. A create removes such leftovers first
		// (transcript.Store.CreateSession), so trying again succeeds.
		s.failWith(w, r, http.StatusConflict, ErrorDetail{Code: CodeExists, Field: "id",
			Message: fmt.Sprintf("session %q is being deleted, or segments of appends that raced its deletion landed as it was created: it reads as no session; create it again", req.ID)}, err)
		return
	}
	if err != nil {
		s.failStore(w, r, err)
		return
	}
	defer s.sessions.release(hd)
	meta := metadataOf(hd.sess.Snapshot())
	field, has, asked := "", "", ""
	switch {
	case meta.Cwd != req.Cwd:
		field, has, asked = "cwd", strconv.Quote(meta.Cwd), strconv.Quote(req.Cwd)
	case meta.Strict != strict:
		field, has, asked = "strict", strconv.FormatBool(meta.Strict), strconv.FormatBool(strict)
	case req.Name != "" && meta.Name != req.Name:
		field, has, asked = "name", strconv.Quote(meta.Name), strconv.Quote(req.Name)
	}
	if field != "" {
		s.failWith(w, r, http.StatusConflict, ErrorDetail{Code: CodeExists, Field: field,
			Message: fmt.Sprintf("session %q exists with %s %s, not %s", req.ID, field, has, asked)}, nil)
		return
	}
	writeJSON(w, http.StatusOK, meta)
}

// ListResponse is the answer to GET /v1/sessions.
type ListResponse struct {
	// Sessions are the page's sessions, in id order.
	Sessions []SessionMetadata `json:"sessions"`
	// Next is the cursor of the next page (its "after"); absent on the last page.
	Next string `json:"next,omitempty"`
}

// list answers a page of the owner's sessions (repository.ListPage): those
// after the cursor "after", at most "limit", only those of "cwd" when given.
func (s *Server) list(w http.ResponseWriter, r *http.Request, repo *repository.Repository) {
	q := r.URL.Query()
	limit, err := queryInt(r, "limit", repository.DefaultListLimit)
	if err != nil || limit == 0 {
		s.failWith(w, r, http.StatusBadRequest, ErrorDetail{Code: CodeInvalidRequest, Field: "limit",
			Message: fmt.Sprintf("limit must be an integer from 1 to %d", repository.MaxListLimit)}, err)
		return
	}
	page, err := repo.ListPage(r.Context(), repository.ListOptions{Cwd: q.Get("cwd"), After: q.Get("after"), Limit: limit})
	if err != nil {
		s.failStore(w, r, err)
		return
	}
	out := ListResponse{Sessions: make([]SessionMetadata, len(page.Sessions)), Next: page.Next}
	for i, info := range page.Sessions {
		out.Sessions[i] = metadataOf(info)
	}
	writeJSON(w, http.StatusOK, out)
}

// open answers the session's metadata from its handle, brought up to date.
func (s *Server) open(w http.ResponseWriter, r *http.Request, repo *repository.Repository) {
	n, err := queryInt(r, "entries", 0)
	if err != nil {
		s.failWith(w, r, http.StatusBadRequest, ErrorDetail{Code: CodeInvalidRequest, Field: "entries", Message: err.Error()}, err)
		return
	}
	hd, err := s.current(r.Context(), repo, r.PathValue("id"))
	if err != nil {
		s.failStore(w, r, err)
		return
	}
	defer s.sessions.release(hd)
	meta := metadataOf(hd.sess.Snapshot())
	meta.Damaged = damagedOf(hd.sess)
	if n == 0 {
		writeJSON(w, http.StatusOK, meta)
		return
	}
	// ?entries=N: the first page as well, read in this request, so that a
	// client opening a session (metadata, then every page) saves the first
	// page's round trip, and the bucket read that page would make.
	data, err := json.Marshal(meta)
	if err != nil {
		s.failStore(w, r, err)
		return
	}
	lead := append(data[:len(data)-1:len(data)-1], `,"page":`...) // without its closing brace
	s.writePage(w, lead, s.boundPage(hd.sess.Page(0, min(n, s.cfg.MaxPage))), 0, meta.Damaged, "}\n")
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request, repo *repository.Repository) {
	key := sessionKey{ns: repo.Namespace(), id: r.PathValue("id")}
	s.sessions.drop(key)
	if err := repo.Delete(r.Context(), r.PathValue("id")); err != nil {
		s.failStore(w, r, err)
		return
	}
	s.sessions.drop(key) // a handle a concurrent read cached meanwhile
	w.WriteHeader(http.StatusNoContent)
}

// ForkRequest is the body of POST /v1/sessions/{id}/fork.
type ForkRequest struct {
	// EntryID is the entry the fork ends at, a JSON string: the new session holds
	// the path from the root to it. JSON null makes an empty fork (the header
	// alone, naming the source as parentSession: Pi's fork before the first user
	// message); absent, the fork holds every entry of the source, every branch,
	// in sequence order (Pi's fork without an entry).
	EntryID json.RawMessage `json:"entryId,omitempty"`
	// ID is the new session's id; empty for a new random one. An id that exists
	// answers 409 exists (field "id").
	ID string `json:"id,omitempty"`
	// Cwd is recorded in the new session's header; empty for the source's.
	Cwd string `json:"cwd,omitempty"`
}

// forkOptions reads req's entryId into the repository's options; a value that is
// neither a string nor null is a type error.
func (req ForkRequest) forkOptions() (repository.ForkOptions, error) {
	opts := repository.ForkOptions{ID: req.ID, Cwd: req.Cwd}
	switch {
	case len(req.EntryID) == 0:
		opts.Whole = true
	case string(req.EntryID) == "null":
	default:
		// Decoded as the store decodes ids (jsonscan.String: a lone surrogate
		// is its WTF-8 bytes, not U+FFFD), so that it names the entry sent.
		at, ok := jsonscan.String(req.EntryID)
		if !ok || at == "" {
			return opts, errors.New(`field "entryId" must be a non-empty string or null`)
		}
		opts.At = at
	}
	return opts, nil
}

func (s *Server) fork(w http.ResponseWriter, r *http.Request, repo *repository.Repository) {
	var req ForkRequest
	data, ok := s.decodeOptional(w, r, &req)
	if !ok {
		return
	}
	req.ID = asSent(data, "id", req.ID)
	opts, err := req.forkOptions()
	if err != nil {
		s.failWith(w, r, http.StatusBadRequest, ErrorDetail{Code: CodeInvalidRequest, Field: "entryId", Message: err.Error()}, err)
		return
	}
	if req.ID != "" {
		if err := repository.ValidateID(req.ID); err != nil {
			s.failWith(w, r, http.StatusBadRequest, ErrorDetail{Code: CodeInvalidRequest, Field: "id", Message: err.Error()}, err)
			return
		}
	}
	hd, err := s.current(r.Context(), repo, r.PathValue("id"))
	if err != nil {
		s.failStore(w, r, err)
		return
	}
	defer s.sessions.release(hd)
	own, err := s.cfg.Repositories.Repository(repo.Owner())
	if err != nil {
		s.failStore(w, r, err)
		return
	}
	sess, err := own.ForkSession(r.Context(), hd.sess, opts)
	var enf *repository.EntryNotFoundError
	switch {
	case err == nil:
		s.keep(own, sess)
		writeJSON(w, http.StatusCreated, metadataOf(sess.Snapshot()))
		return
	case errors.As(err, &enf):
		s.failWith(w, r, http.StatusUnprocessableEntity, ErrorDetail{Code: CodeInvalidForkTarget, EntryID: enf.Entry,
			Message: fmt.Sprintf("entry %q is not in the session", enf.Entry)}, err)
	case errors.Is(err, bucket.ErrExists):
		s.failWith(w, r, http.StatusConflict, ErrorDetail{Code: CodeExists, Field: "id",
			Message: fmt.Sprintf("session %q exists", req.ID)}, err)
	default:
		s.failStore(w, r, err)
	}
	_ = own.Close()
}
