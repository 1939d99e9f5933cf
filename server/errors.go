package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// ErrorCode is the machine-readable reason of an error response (error.code).
// openapi.yaml lists every one, with the statuses that carry it.
type ErrorCode string

// The error codes.
const (
	CodeUnauthorized         ErrorCode = "unauthorized"           // 401: missing, invalid or expired credentials
	CodeNotFound             ErrorCode = "not_found"              // 404: no such session for this owner
	CodeUnknownRoute         ErrorCode = "unknown_route"          // 404: no such path
	CodeMethodNotAllowed     ErrorCode = "method_not_allowed"     // 405: the path has no such method (Allow lists those it has)
	CodeRequestTimeout       ErrorCode = "request_timeout"        // 408: the body did not arrive in time
	CodeStaleHead            ErrorCode = "stale_head"             // 409: the expected head is not the committed head (head: the committed one)
	CodeEntryConflict        ErrorCode = "entry_conflict"         // 409: an entry id exists with other bytes (entryId)
	CodeExists               ErrorCode = "exists"                 // 409: the session exists with other fields (field)
	CodeInvalidRequest       ErrorCode = "invalid_request"        // 400: malformed body or parameter (field, when one is to blame)
	CodeInvalidEntry         ErrorCode = "invalid_entry"          // 400: an entry is not a Pi entry (index)
	CodeUnsupportedMediaType ErrorCode = "unsupported_media_type" // 415: a body that is not application/json
	CodeTooLarge             ErrorCode = "too_large"              // 413: the body or an entry is over its limit
	CodeUnknownParent        ErrorCode = "unknown_parent"         // 422: an entry refers to an entry that is not stored (entryId, refersTo)
	CodeTooManyStreams       ErrorCode = "too_many_streams"       // 429: the owner has as many event streams open as allowed (Retry-After)
	CodeInvalidForkTarget    ErrorCode = "invalid_fork_target"    // 422: the fork's entry is not in the session
	CodeInvalidSession       ErrorCode = "invalid_session"        // 500: the session's head does not match its entries
	CodeStorage              ErrorCode = "storage"                // 500: the bucket failed
	CodeUnavailable          ErrorCode = "unavailable"            // 503: the bucket is unreachable, or the server cannot take the request now (Retry-After)
	CodeNotReady             ErrorCode = "not_ready"              // 503: /readyz: the bucket is unreachable (Retry-After)
	CodeTimeout              ErrorCode = "timeout"                // 504: the request's work took over its time limit
)

// ErrorCodes returns every error code the server answers with.
func ErrorCodes() []ErrorCode {
	return []ErrorCode{
		CodeUnauthorized, CodeNotFound, CodeUnknownRoute, CodeMethodNotAllowed, CodeRequestTimeout,
		CodeStaleHead, CodeEntryConflict, CodeExists, CodeInvalidRequest, CodeInvalidEntry,
		CodeUnsupportedMediaType, CodeTooLarge, CodeUnknownParent, CodeTooManyStreams, CodeInvalidForkTarget,
		CodeInvalidSession, CodeStorage, CodeUnavailable, CodeNotReady, CodeTimeout,
	}
}

// RetryAfterSeconds is the Retry-After of a 503: the bucket was unreachable, and a
// client may retry the request (appends are idempotent by entry id).
const RetryAfterSeconds = 1

// ErrorBody is the JSON of every error response: {"error":{...}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail describes an error. Only code and message are always set.
type ErrorDetail struct {
	// Code is the machine-readable reason.
	Code ErrorCode `json:"code"`
	// Message is for people; it never holds entry contents.
	Message string `json:"message"`
	// Head is the committed head of a stale_head conflict (null: no entries).
	Head *string `json:"head,omitempty"`
	// Field names the request field at fault (a type error, an unknown field, a
	// field that differs from the existing session's).
	Field string `json:"field,omitempty"`
	// EntryID is the id of the entry at fault (entry_conflict, unknown_parent).
	EntryID string `json:"entryId,omitempty"`
	// RefersTo is the id an unknown_parent entry names.
	RefersTo string `json:"refersTo,omitempty"`
	// Index is the position, in the request's entries, of an invalid_entry.
	Index *int `json:"index,omitempty"`
}

// fail writes an error response of status with code and message; err (possibly
// nil) goes to the log only.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, code ErrorCode, msg string, err error) {
	s.failWith(w, r, status, ErrorDetail{Code: code, Message: msg}, err)
}

// failWith writes the error response d with status; err goes to the log only. A
// 503 or 429 carries Retry-After.
func (s *Server) failWith(w http.ResponseWriter, r *http.Request, status int, d ErrorDetail, err error) {
	if err != nil {
		infoOf(r).err = err
	}
	if status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
	}
	writeJSON(w, status, ErrorBody{Error: d})
}

// failStore maps an error of the repository to its response. The repository's
// errors wrap the sentinels of the layers below it, each named by the package
// that declares it (see repository's Sentinel errors).
func (s *Server) failStore(w http.ResponseWriter, r *http.Request, err error) {
	var ee *repository.EntryError
	entry := errors.As(err, &ee)
	switch {
	case errors.Is(err, bucket.ErrNotFound):
		s.fail(w, r, http.StatusNotFound, CodeNotFound, "session not found", err)
	case errors.Is(err, repository.ErrStaleHead):
		s.metrics.conflicts.WithLabelValues(string(CodeStaleHead)).Inc()
		s.fail(w, r, http.StatusConflict, CodeStaleHead, "the expected head is not the committed head", err)
	case entry && errors.Is(err, segment.ErrEntryTooLarge):
		s.failWith(w, r, http.StatusRequestEntityTooLarge, ErrorDetail{Code: CodeTooLarge, Index: &ee.Index, Message: ee.Error()}, err)
	case entry && errors.Is(err, pi.ErrInvalidEntry):
		s.failWith(w, r, http.StatusBadRequest, ErrorDetail{Code: CodeInvalidEntry, Index: &ee.Index, Message: ee.Error()}, err)
	case entry && errors.Is(err, transcript.ErrConflict):
		s.metrics.conflicts.WithLabelValues(string(CodeEntryConflict)).Inc()
		s.failWith(w, r, http.StatusConflict, ErrorDetail{Code: CodeEntryConflict, EntryID: ee.EntryID,
			Message: "entry " + strconv.Quote(ee.EntryID) + " exists with other bytes"}, err)
	case entry && ee.RefersTo != "":
		s.failWith(w, r, http.StatusUnprocessableEntity, ErrorDetail{Code: CodeUnknownParent, EntryID: ee.EntryID, RefersTo: ee.RefersTo,
			Message: "entry " + strconv.Quote(ee.EntryID) + " refers to " + strconv.Quote(ee.RefersTo) + ", which is not stored"}, err)
	case errors.Is(err, transcript.ErrConflict):
		s.metrics.conflicts.WithLabelValues(string(CodeEntryConflict)).Inc()
		s.fail(w, r, http.StatusConflict, CodeEntryConflict, "an entry id exists with other bytes", err)
	case errors.Is(err, segment.ErrTooLarge):
		s.fail(w, r, http.StatusRequestEntityTooLarge, CodeTooLarge, "the entries are over the size of one segment", err)
	case errors.Is(err, bucket.ErrExists):
		s.fail(w, r, http.StatusConflict, CodeExists, "session already exists", err)
	case errors.Is(err, repository.ErrHeadMismatch) && errors.Is(err, transcript.ErrInvalidHead):
		s.fail(w, r, http.StatusInternalServerError, CodeInvalidSession, "the session's head object (HEAD.json) is damaged; transcript verify names it", err)
	case errors.Is(err, repository.ErrHeadMismatch):
		s.fail(w, r, http.StatusInternalServerError, CodeInvalidSession, "the session's head does not match its entries (a committed segment is missing or damaged); transcript verify names it", err)
	case errors.Is(err, pi.ErrInvalidEntry):
		s.fail(w, r, http.StatusBadRequest, CodeInvalidEntry, err.Error(), err)
	case errors.Is(err, repository.ErrInvalid):
		s.fail(w, r, http.StatusBadRequest, CodeInvalidRequest, err.Error(), err)
	case errors.Is(err, context.DeadlineExceeded) && r.Context().Err() != nil:
		s.fail(w, r, http.StatusGatewayTimeout, CodeTimeout, "the request timed out", err)
	case errors.Is(err, bucket.ErrUnavailable):
		s.fail(w, r, http.StatusServiceUnavailable, CodeUnavailable, "the bucket is unreachable; retry later", err)
	default:
		s.fail(w, r, http.StatusInternalServerError, CodeStorage, "storage error", err)
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		code, data = http.StatusInternalServerError, []byte(`{"error":{"code":"storage","message":"encoding failed"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(data, '\n'))
}
