package pi

import (
	"fmt"
	"strconv"
	"time"
)

// CurrentVersion is the Pi session format version the store writes.
const CurrentVersion = 3

// Header is the first line of a session file ({"type":"session",...}). It is not a
// tree entry. Unknown header fields are kept byte-for-byte.
type Header struct {
	raw     []byte
	id      string
	ts      string
	cwd     string
	parent  string
	version int
}

// ParseHeader parses a header line. A header without "version" is version 1.
// Errors wrap ErrInvalidHeader.
func ParseHeader(raw []byte) (Header, error) {
	e, err := parseObject(raw)
	if err != nil {
		return Header{}, fmt.Errorf("%w: %w", ErrInvalidHeader, err)
	}
	if e.typ != TypeSession {
		return Header{}, fmt.Errorf("%w: first line has type %q, want %q", ErrInvalidHeader, e.typ, TypeSession)
	}
	if err := e.checkLinks(); err != nil {
		return Header{}, fmt.Errorf("%w: %w", ErrInvalidHeader, err)
	}
	h := Header{raw: raw, id: e.id, ts: e.ts, version: 1}
	h.cwd, _ = jsonString(topField(raw, "cwd"))
	h.parent, _ = jsonString(topField(raw, "parentSession"))
	if v := e.field(fVersion); v != nil {
		n, err := strconv.Atoi(string(v))
		if err != nil {
			return Header{}, fmt.Errorf("%w: version %s", ErrInvalidHeader, v)
		}
		h.version = n
	}
	return h, nil
}

// NewHeader builds a version 3 header line in Pi's field order:
// {"type":"session","version":3,"id":..,"timestamp":..,"cwd":..,"parentSession":..}.
func NewHeader(id string, ts time.Time, cwd, parentSession string) Header {
	b := []byte(`{"type":"session","version":3,"id":`)
	b = AppendString(b, id)
	b = append(b, `,"timestamp":`...)
	b = AppendString(b, FormatTimestamp(ts))
	b = append(b, `,"cwd":`...)
	b = AppendString(b, cwd)
	if parentSession != "" {
		b = append(b, `,"parentSession":`...)
		b = AppendString(b, parentSession)
	}
	b = append(b, '}')
	h, err := ParseHeader(b)
	if err != nil {
		panic("pi: NewHeader built an invalid header: " + err.Error())
	}
	return h
}

// Raw returns the header line without "\n". The caller must not modify it.
func (h Header) Raw() []byte { return h.raw }

// ID returns the header's session id.
func (h Header) ID() string { return h.id }

// Timestamp returns the header's ISO-8601 timestamp.
func (h Header) Timestamp() string { return h.ts }

// Cwd returns the header's working directory.
func (h Header) Cwd() string { return h.cwd }

// ParentSession returns the header's parentSession ("" if none).
func (h Header) ParentSession() string { return h.parent }

// Version returns the header's format version (1 when absent).
func (h Header) Version() int { return h.version }

// IsZero reports whether h is the zero Header (no header known).
func (h Header) IsZero() bool { return h.raw == nil }

// FormatTimestamp formats t as Pi does: RFC 3339 in UTC with milliseconds,
// e.g. "2026-09-25T22:29:10.000Z".
func FormatTimestamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}
