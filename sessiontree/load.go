package sessiontree

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/transcript"
)

// MaxLineBytes is the longest line the loader accepts; longer lines are skipped
// and reported as malformed. It is the store's largest entry: a line the tree
// holds is an entry a segment can hold.
const MaxLineBytes = segment.DefaultMaxEntrySize

// LineError describes one line the loader skipped.
type LineError struct {
	// Line is the 1-based line number in the file.
	Line int
	// Offset is the byte offset of the line's start.
	Offset int64
	// Err says what is wrong; it wraps pi.ErrInvalidEntry or transcript.ErrConflict.
	Err error
}

func (e LineError) Error() string {
	return fmt.Sprintf("line %d (offset %d): %v", e.Line, e.Offset, e.Err)
}

// Unwrap returns the underlying error.
func (e LineError) Unwrap() error { return e.Err }

// LoadReport says what a load, an import, a pull or a merge of the log found
// besides the entries it kept.
type LoadReport struct {
	// TornBytes is the length of an unterminated last line that did not parse (a
	// write cut short by a crash); it was dropped, and the next append to that file
	// saves it to the file's path + TornSuffix before truncating it away.
	TornBytes int
	// MissingNewline reports that the last line lacked its "\n" but parsed; it was
	// kept and the newline is added before the next append.
	MissingNewline bool
	// Malformed lists complete lines that were skipped.
	Malformed []LineError
	// Duplicates counts entries whose id was already known with identical bytes.
	Duplicates int
	// Conflicts lists entries whose id was already known with other bytes; the
	// first one is kept.
	Conflicts []LineError
	// Added counts entries added (by a pull or a merge of the log).
	Added int
}

// Clean reports whether nothing was dropped, skipped or in conflict.
func (r LoadReport) Clean() bool {
	return r.TornBytes == 0 && len(r.Malformed) == 0 && len(r.Conflicts) == 0
}

// decoded is a parsed session file.
type decoded struct {
	header  Header
	entries []Entry
	// validLen is the length of the prefix of the data that ends with the last
	// complete line (or the whole data when the unterminated tail parsed).
	validLen int64
}

type rawLine struct {
	b    []byte
	line int
	off  int64
}

// utf8BOM is the byte order mark some editors put at the start of a UTF-8 file.
const utf8BOM = "\xef\xbb\xbf"

// splitLines splits data into non-empty lines and handles an unterminated tail.
// A byte order mark at the start is not part of the first line: Pi trims the
// file's text, BOM included, before it splits the lines.
func splitLines(data []byte, rep *LoadReport) ([]rawLine, int64) {
	out := make([]rawLine, 0, bytes.Count(data, []byte{'\n'})+1)
	var off int64
	if len(data) >= len(utf8BOM) && string(data[:len(utf8BOM)]) == utf8BOM {
		data, off = data[len(utf8BOM):], int64(len(utf8BOM))
	}
	line := 0
	validLen := off + int64(len(data))
	for len(data) > 0 {
		line++
		nl := bytes.IndexByte(data, '\n')
		var l []byte
		if nl < 0 {
			l = data
			data = nil
			if len(bytes.TrimSpace(l)) == 0 {
				break
			}
			if len(l) > MaxLineBytes || !validObject(l) {
				rep.TornBytes = len(l)
				validLen = off
				break
			}
			rep.MissingNewline = true
		} else {
			l = data[:nl:nl]
			data = data[nl+1:]
		}
		start := off
		off += int64(len(l)) + 1
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		if err := checkSize(l); err != nil {
			rep.Malformed = append(rep.Malformed, LineError{line, start, err})
			continue
		}
		out = append(out, rawLine{l, line, start})
	}
	return out, validLen
}

func validObject(l []byte) bool {
	err := pi.CheckObject(l)
	return err == nil
}

// decodeSession parses a whole session file. With migrateOld, version 1 and 2
// files are migrated; otherwise they are rejected.
func decodeSession(data []byte, migrateOld bool) (decoded, LoadReport, error) {
	var rep LoadReport
	lines, validLen := splitLines(data, &rep)
	var d decoded
	d.validLen = validLen
	hi := -1
	for i, l := range lines {
		if err := pi.CheckObject(l.b); err != nil {
			rep.Malformed = append(rep.Malformed, LineError{l.line, l.off, err})
			continue
		}
		h, err := pi.ParseHeader(l.b)
		if err != nil {
			return d, rep, fmt.Errorf("line %d: %w", l.line, err)
		}
		d.header, hi = h, i
		break
	}
	if hi < 0 {
		return d, rep, fmt.Errorf("%w: no header line", pi.ErrInvalidHeader)
	}
	lines = lines[hi+1:]
	if d.header.Version() < pi.CurrentVersion {
		if !migrateOld {
			return d, rep, fmt.Errorf("%w: version %d file; import it to migrate", pi.ErrInvalidHeader, d.header.Version())
		}
		raws := make([][]byte, len(lines))
		for i, l := range lines {
			raws[i] = l.b
		}
		d.header, raws = pi.Migrate(d.header, raws)
		for i := range lines {
			lines[i].b = raws[i]
		}
	}
	d.entries = make([]Entry, 0, len(lines))
	seen := make(map[string]int, len(lines))
	for _, l := range lines {
		e, err := ParseEntry(l.b)
		if err != nil {
			rep.Malformed = append(rep.Malformed, LineError{l.line, l.off, err})
			continue
		}
		if j, ok := seen[e.ID()]; ok {
			if bytes.Equal(d.entries[j].Raw(), e.Raw()) {
				rep.Duplicates++
			} else {
				rep.Conflicts = append(rep.Conflicts, LineError{l.line, l.off, fmt.Errorf("%w: id %q", transcript.ErrConflict, e.ID())})
			}
			continue
		}
		seen[e.ID()] = len(d.entries)
		d.entries = append(d.entries, e)
	}
	return d, rep, nil
}

// ParseSession reads a Pi session file of version 1, 2 or 3 from r, migrates it to
// version 3 and returns its header and entries (deduplicated by id, in file
// order) with a report of what was skipped. It fails only on read errors and when
// there is no valid header.
func ParseSession(r io.Reader) (Header, []Entry, LoadReport, error) {
	data, err := readAll(r)
	if err != nil {
		return Header{}, nil, LoadReport{}, fmt.Errorf("read session: %w", err)
	}
	d, rep, err := decodeSession(data, true)
	if err != nil {
		return Header{}, nil, rep, err
	}
	return d.header, d.entries, rep, nil
}

// readAll reads r to its end like io.ReadAll, into a buffer made at the file's
// size when r is a regular file (an import of a session of hundreds of
// megabytes would otherwise grow the buffer step by step, copying it about
// twice over).
func readAll(r io.Reader) ([]byte, error) {
	var b bytes.Buffer
	if f, ok := r.(interface{ Stat() (fs.FileInfo, error) }); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > 0 {
			b.Grow(int(st.Size()) + bytes.MinRead)
		}
	}
	_, err := b.ReadFrom(r)
	return b.Bytes(), err
}

// WriteSession writes a version 3 session file: the header line, then each entry's
// raw bytes, each followed by "\n".
func WriteSession(w io.Writer, h Header, entries []Entry) error {
	n := len(h.Raw()) + 1
	for _, e := range entries {
		n += len(e.Raw()) + 1
	}
	buf := make([]byte, 0, n)
	buf = append(append(buf, h.Raw()...), '\n')
	for _, e := range entries {
		buf = append(append(buf, e.Raw()...), '\n')
	}
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("write session: %w", err)
	}
	return nil
}
