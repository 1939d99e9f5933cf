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
	if !s.decodeOptional(w, r, &req) {
		return
	}
	strict := req.Strict == nil || *req.Strict
	sess, err := repo.Create(r.Context(), repository.CreateOptions{ID: req.ID, Name: req.Name, Cwd: req.Cwd, Strict: strict})
	if errors.Is(err, bucket.ErrExists) && req.ID != "" {
		s.createAgain(w, r, repo, req, strict)
		return
	}
	if err != nil {
		s.failStore(w, r, err)
		return
	}
	s.writeSession(w, r, http.StatusCreated, sess)
}

// createAgain answers a create of a session that exists: the session (200) when
// the request asks for what it holds (a retry), else 409 exists naming the first
// field that differs.
func (s *Server) createAgain(w http.ResponseWriter, r *http.Request, repo *repository.Repository, req CreateRequest, strict bool) {
	sess, err := repo.Open(r.Context(), req.ID)
	if err != nil {
		s.failStore(w, r, err)
		return
	}
	entries, err := sess.Entries(r.Context())
	if err != nil {
		s.failStore(w, r, err)
		return
	}
	meta := sessionMetadata(sess, entries)
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

// writeSession answers the metadata of sess, read afresh.
func (s *Server) writeSession(w http.ResponseWriter, r *http.Request, code int, sess *repository.Session) {
	entries, err := sess.Entries(r.Context())
	if err != nil {
		s.failStore(w, r, err)
		return
	}
	writeJSON(w, code, sessionMetadata(sess, entries))
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, repo *repository.Repository) {
	infos, err := repo.List(r.Context())
	if err != nil {
		s.failStore(w, r, err)
		return
	}
	out := make([]SessionMetadata, len(infos))
	for i, info := range infos {
		out[i] = metadataOf(info, "")
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": out})
}

func (s *Server) open(w http.ResponseWriter, r *http.Request, repo *repository.Repository) {
	sess, err := repo.Open(r.Context(), r.PathValue("id"))
	if err != nil {
		s.failStore(w, r, err)
		return
	}
	s.writeSession(w, r, http.StatusOK, sess)
}

func (s *Server) delete(w http.ResponseWriter, r *http.Request, repo *repository.Repository) {
	s.sessions.drop(sessionKey{ns: repo.Namespace(), id: r.PathValue("id")})
	if err := repo.Delete(r.Context(), r.PathValue("id")); err != nil {
		s.failStore(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// entries answers the entries after sequence number "after" (default 0: from the
// first), at most "limit" of them (default and cap Config.MaxPage), in the
// session's merge order. The sequence number of an entry is its index in that
// order, so afterEntrySeq of Pi's getEntries maps onto "after" directly.
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
	sess, err := repo.Open(r.Context(), r.PathValue("id"))
	if err != nil {
		s.failStore(w, r, err)
		return
	}
	all, err := sess.Entries(r.Context())
	if err != nil {
		s.failStore(w, r, err)
		return
	}
	page := all[min(after, len(all)):min(after+limit, len(all))]
	var b bytes.Buffer
	b.WriteString(`{"entries":[`)
	for i, e := range page {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(e.Raw())
	}
	fmt.Fprintf(&b, `],"nextSeq":%d,"entryCount":%d,"head":`, min(after, len(all))+len(page), len(all))
	if h := sess.Head(); h == "" {
		b.WriteString("null")
	} else {
		b.Write(pi.AppendString(nil, h))
	}
	b.WriteString("}\n")
	w.Header().Set("Content-Type", "application/json")
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
	id := r.PathValue("id")
	hd, err := s.openHandle(r, repo, id)
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
		s.sessions.drop(hd.key) // the next append starts from a fresh read
	}
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, AppendResponse{Head: headPtr(sess.Head())})
	case errors.Is(err, repository.ErrStaleHead):
		s.metrics.conflicts.WithLabelValues(string(CodeStaleHead)).Inc()
		d := ErrorDetail{Code: CodeStaleHead, Message: "the expected head is not the committed head"}
		if cur, oerr := repo.Open(r.Context(), id); oerr == nil {
			d.Head = headPtr(cur.Head())
		}
		s.failWith(w, r, http.StatusConflict, d, err)
	default:
		s.failStore(w, r, err) // entry_conflict and unknown_parent name the entry
	}
}

// openHandle returns the cached handle of session id of repo's owner, or opens the
// session with a repository of its own and caches it. The caller releases it.
func (s *Server) openHandle(r *http.Request, repo *repository.Repository, id string) (*cachedSession, error) {
	key := sessionKey{ns: repo.Namespace(), id: id}
	if hd := s.sessions.acquire(key); hd != nil {
		return hd, nil
	}
	own, err := s.cfg.Repositories.Repository(repo.Owner())
	if err != nil {
		return nil, err
	}
	sess, err := own.Open(r.Context(), id)
	if err != nil {
		_ = own.Close()
		return nil, err
	}
	return s.sessions.add(&cachedSession{key: key, repo: own, sess: sess}), nil
}

// ForkRequest is the body of POST /v1/sessions/{id}/fork.
type ForkRequest struct {
	// EntryID is the entry the fork ends at: the new session holds the path from
	// the root to it.
	EntryID string `json:"entryId"`
}

func (s *Server) fork(w http.ResponseWriter, r *http.Request, repo *repository.Repository) {
	var req ForkRequest
	if !s.decode(w, r, &req) {
		return
	}
	if req.EntryID == "" {
		s.failWith(w, r, http.StatusBadRequest, ErrorDetail{Code: CodeInvalidRequest, Field: "entryId", Message: "entryId is required"}, nil)
		return
	}
	id := r.PathValue("id")
	sess, err := repo.Fork(r.Context(), id, req.EntryID)
	if errors.Is(err, bucket.ErrNotFound) {
		// Tell an unknown entry of an existing session from an unknown session.
		if _, oerr := repo.Open(r.Context(), id); oerr == nil {
			s.failWith(w, r, http.StatusUnprocessableEntity, ErrorDetail{Code: CodeInvalidForkTarget, EntryID: req.EntryID,
				Message: fmt.Sprintf("entry %q is not in the session", req.EntryID)}, err)
			return
		}
	}
	if err != nil {
		s.failStore(w, r, err)
		return
	}
	s.writeSession(w, r, http.StatusCreated, sess)
}
