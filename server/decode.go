package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/transcriptstore/transcript/internal/jsonscan"
)

// Request bodies are checked at the edge, before any work: a body must be JSON
// (Content-Type application/json, or a +json type; 415 otherwise), arrive within
// Config.BodyTimeout (408), fit Config.MaxBodyBytes (413), and decode into its
// request type exactly: no unknown field, no value of another type, nothing after
// the JSON value (400, naming the field when one is to blame). A body is UTF-8,
// as JSON text is (RFC 8259): encoding/json would replace an invalid byte
// sequence in a string with U+FFFD, creating a session under another id than the
// one sent, and an entry keeps its bytes as sent, so one stored with invalid
// UTF-8 would make every later answer holding it invalid JSON (400). A body
// with a Content-Encoding (gzip, say) is not read (415).

// readBody reads the request body. It answers the error response itself and
// returns false when the body is too large, stalls or cannot be read, or is not
// JSON; an empty body (only white space) is returned as nil, whatever its type.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.ContentLength > s.cfg.MaxBodyBytes {
		// Refused before it is read: the client learns at once rather than
		// after sending it (or after the body timeout, if it never comes).
		w.Header().Set("Connection", "close")
		s.fail(w, r, http.StatusRequestEntityTooLarge, CodeTooLarge,
			fmt.Sprintf("request body of %d bytes, over %d bytes", r.ContentLength, s.cfg.MaxBodyBytes), nil)
		return nil, false
	}
	var err error
	if br, ok := r.Body.(*budgetReader); ok && r.ContentLength > 0 {
		err = br.reserve(r.ContentLength)
	}
	var data []byte
	if err == nil {
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout)) // not supported by test recorders
		data, err = readAll(r.Body, r.ContentLength)
		_ = rc.SetReadDeadline(time.Time{})
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		s.fail(w, r, http.StatusRequestEntityTooLarge, CodeTooLarge, fmt.Sprintf("request body over %d bytes", s.cfg.MaxBodyBytes), err)
		return nil, false
	case errors.Is(err, errBodyBudget):
		w.Header().Set("Connection", "close") // the rest of the body may still come
		s.fail(w, r, http.StatusServiceUnavailable, CodeUnavailable,
			"the server is reading too many request bodies at once; retry later", err)
		return nil, false
	case errors.Is(err, errOwnerBodyBudget):
		w.Header().Set("Connection", "close") // the rest of the body may still come
		s.fail(w, r, http.StatusServiceUnavailable, CodeUnavailable,
			"the server is reading too many request bodies of this owner at once; retry later", err)
		return nil, false
	case isTimeout(err):
		w.Header().Set("Connection", "close") // the rest of the body may still come
		s.fail(w, r, http.StatusRequestTimeout, CodeRequestTimeout,
			fmt.Sprintf("the request body did not arrive within %s", s.cfg.BodyTimeout), err)
		return nil, false
	case err != nil:
		s.fail(w, r, http.StatusBadRequest, CodeInvalidRequest, "unreadable request body", err)
		return nil, false
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, true
	}
	if ct := r.Header.Get("Content-Type"); !isJSON(ct) {
		msg := "the request body must be JSON (Content-Type: application/json)"
		if ct != "" {
			msg += fmt.Sprintf(", not %q", ct)
		}
		s.fail(w, r, http.StatusUnsupportedMediaType, CodeUnsupportedMediaType, msg, nil)
		return nil, false
	}
	if ce := r.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		s.fail(w, r, http.StatusUnsupportedMediaType, CodeUnsupportedMediaType,
			fmt.Sprintf("the request body must be sent without a Content-Encoding, not %q", ce), nil)
		return nil, false
	}
	if !utf8.Valid(data) {
		s.fail(w, r, http.StatusBadRequest, CodeInvalidRequest, "the request body is not valid UTF-8 (JSON text must be)", nil)
		return nil, false
	}
	return data, true
}

// readAll reads body, of size bytes when size is above zero (its declared
// Content-Length, within Config.MaxBodyBytes: net/http reads no more), into one
// buffer of that size; a body of unknown size as io.ReadAll reads it.
func readAll(body io.Reader, size int64) ([]byte, error) {
	if size <= 0 {
		return io.ReadAll(body)
	}
	b := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead)) // room to read EOF without growing
	_, err := b.ReadFrom(body)
	return b.Bytes(), err
}

// isTimeout reports a read that ran past its deadline.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// isJSON reports whether the media type of a Content-Type header is JSON.
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// decode reads a required JSON body into v (see readBody and decodeJSON).
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	data, ok := s.readBody(w, r)
	if !ok {
		return false
	}
	if data == nil {
		s.fail(w, r, http.StatusBadRequest, CodeInvalidRequest, "the request needs a JSON body", nil)
		return false
	}
	return s.decodeJSON(w, r, data, v)
}

// decodeOptional reads a JSON body into v; an empty body leaves v as is. It
// returns the body (nil when empty) for asSent.
func (s *Server) decodeOptional(w http.ResponseWriter, r *http.Request, v any) ([]byte, bool) {
	data, ok := s.readBody(w, r)
	if !ok {
		return nil, false
	}
	return data, data == nil || s.decodeJSON(w, r, data, v)
}

// asSent returns decoded, the string encoding/json decoded for field key of
// the JSON object data, as the store decodes ids (jsonscan.String) when the
// two may differ: encoding/json decodes a lone UTF-16 surrogate escape
// ("\ud800") as U+FFFD, which would name a session other than the one sent,
// where the store keeps the surrogate's WTF-8 bytes, which the id rule
// refuses (an id is UTF-8). Keys are matched as encoding/json matches them
// (case-insensitively, the last string counting).
func asSent(data []byte, key, decoded string) string {
	if !strings.ContainsRune(decoded, utf8.RuneError) {
		return decoded
	}
	_ = jsonscan.EachRawField(data, func(k, v []byte, _ int) {
		if len(v) > 0 && v[0] == '"' && bytes.EqualFold(k, []byte(key)) {
			if id, ok := jsonscan.String(v); ok {
				decoded = id
			}
		}
	})
	return decoded
}

// decodeJSON decodes data, one JSON value, into v: unknown fields, values of the
// wrong type and anything after the value answer 400 naming what is wrong.
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, data []byte, v any) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = errTrailing
		}
	}
	if err == nil {
		return true
	}
	d := ErrorDetail{Code: CodeInvalidRequest}
	var (
		syntax *json.SyntaxError
		typ    *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syntax):
		d.Message = fmt.Sprintf("malformed JSON body at byte %d: %v", syntax.Offset, syntax)
	case errors.Is(err, io.ErrUnexpectedEOF):
		d.Message = "malformed JSON body: it ends early"
	case errors.Is(err, errTrailing):
		d.Message = "malformed JSON body: data after the JSON value"
	case errors.As(err, &typ) && typ.Field == "":
		d.Message = fmt.Sprintf("the body must be a JSON object, not %s", typ.Value)
	case errors.As(err, &typ):
		d.Field = typ.Field
		d.Message = fmt.Sprintf("field %q must be %s, not %s", typ.Field, jsonType(typ.Type.String()), typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		d.Field = strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		d.Message = fmt.Sprintf("unknown field %q", d.Field)
	default:
		d.Message = "malformed JSON body"
	}
	s.failWith(w, r, http.StatusBadRequest, d, err)
	return false
}

// errTrailing marks data after the JSON value of a body.
var errTrailing = errors.New("data after the JSON value")

// jsonType names the JSON type of a Go type of a request field.
func jsonType(goType string) string {
	switch {
	case goType == "string", goType == "*string":
		return "a string"
	case goType == "bool", goType == "*bool":
		return "a boolean"
	case strings.HasPrefix(goType, "[]"):
		return "an array"
	case goType == "json.RawMessage":
		return "a JSON value"
	default:
		return goType
	}
}
