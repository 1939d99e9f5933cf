package transcript

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
)

// MaxWriterIDLen is the longest writer id accepted, in bytes.
const MaxWriterIDLen = 64

// Writer identifies one writing process (a replica) and numbers its segments. Every
// segment key carries the writer id and the next sequence number, so two writers, or
// two segments of one writer, never produce the same key. The key's time comes from
// the store's Clock, a hybrid logical clock per session fed by every listing (see
// the package's clock rule). A Writer is safe for concurrent use.
type Writer struct {
	id  string
	seq atomic.Uint64
}

// NewWriter returns a writer with the given id (see ValidateWriterID), numbering
// segments from 1.
func NewWriter(id string) (*Writer, error) {
	if err := ValidateWriterID(id); err != nil {
		return nil, err
	}
	return &Writer{id: id}, nil
}

// NewRandomWriter returns a writer whose id is the host name followed by random hex,
// unique to this process.
func NewRandomWriter() *Writer {
	host, _ := os.Hostname()
	host = strings.TrimLeft(strings.ReplaceAll(sanitizeWriterID(host), "..", "."), ".")
	if len(host) > 32 {
		host = host[:32]
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	if host != "" {
		id = host + "." + id
	}
	return &Writer{id: id}
}

// ID returns the writer id.
func (w *Writer) ID() string { return w.id }

// Next returns the next sequence number (1, 2, ...).
func (w *Writer) Next() uint64 { return w.seq.Add(1) }

// ValidateWriterID checks that id is 1 to MaxWriterIDLen bytes of ASCII letters,
// digits, '.', '_' and '-' that is also a valid id part (ValidatePart). It returns an
// error wrapping ErrInvalidRef.
func ValidateWriterID(id string) error {
	if id == "" || len(id) > MaxWriterIDLen {
		return fmt.Errorf("%w: writer id must be 1 to %d bytes, got %d", ErrInvalidRef, MaxWriterIDLen, len(id))
	}
	if err := ValidatePart("writer id", id); err != nil {
		return err
	}
	if sanitizeWriterID(id) != id {
		return fmt.Errorf("%w: writer id %q may hold only letters, digits, '.', '_' and '-'", ErrInvalidRef, id)
	}
	return nil
}

func sanitizeWriterID(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return -1
	}, s)
}
