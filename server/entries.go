package server

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/repository"
)

// entries answers the entries after sequence number "after" (default 0: from the
// first), at most "limit" of them (default and cap Config.MaxPage, and at most
// Config.MaxPageBytes of them, see boundPage), in the
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
	s.writePage(w, nil, s.boundPage(hd.sess.Page(after, limit)), after, damagedOf(hd.sess), "\n")
}

// damagedOf returns why sess, a strict session, is damaged (its stored head
// names segments the bucket lacks or does not match its committed entries:
// repository.Session.Err), for the "damaged" field of its metadata and pages
// and the "damaged" event of its stream; "" for a whole session.
func damagedOf(sess *repository.Session) string {
	if err := sess.Err(); err != nil {
		return err.Error() + " (run transcript verify)"
	}
	return ""
}

// boundPage cuts page before the entry that would take its entries' bytes past
// Config.MaxPageBytes, keeping at least one entry: a reader goes on from the
// page's nextSeq, so a shorter page costs it a round trip, never an entry.
func (s *Server) boundPage(page repository.Page) repository.Page {
	size := 0
	for i, e := range page.Entries {
		size += len(e.Raw()) + 1
		if size > s.cfg.MaxPageBytes && i > 0 {
			page.Entries = page.Entries[:i:i]
			break
		}
	}
	return page
}

// pageChunk is the most of a page's body a request copies at once. A page is
// up to megabytes (Config.MaxPageBytes); its entries are the handle's own
// bytes, written from there a chunk at a time, so that a request whose client
// reads slowly, or not at all, holds a chunk while it waits, not a copy of the
// page (each such request held one, and nothing bounds their number).
const pageChunk = 64 << 10

// writePage answers 200 with a JSON body of lead, page (the entries after
// sequence number after, as the entries route answers them:
// {"entries":[…],"nextSeq":…,"entryCount":…,"head":…}, then "damaged":…
// unless damaged is "") and trail, with its
// Content-Length, writing at most pageChunk bytes of it at a time but for an
// entry larger than that, written from the handle's bytes.
func (s *Server) writePage(w http.ResponseWriter, lead []byte, page repository.Page, after int, damaged, trail string) {
	end := fmt.Appendf(nil, `],"nextSeq":%d,"entryCount":%d,"head":`, min(after, page.Count)+len(page.Entries), page.Count)
	if page.Head == "" {
		end = append(end, "null"...)
	} else {
		end = pi.AppendString(end, page.Head)
	}
	if damaged != "" {
		end = pi.AppendString(append(end, `,"damaged":`...), damaged)
	}
	end = append(append(end, '}'), trail...)
	const open = `{"entries":[`
	size := len(lead) + len(open) + len(end)
	for i, e := range page.Entries {
		size += len(e.Raw())
		if i > 0 {
			size++
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(size))
	b := s.chunkBuffer()
	defer s.chunks.Put(b)
	var err error
	// put buffers p, first writing out what is buffered when p would not fit;
	// an entry larger than a chunk is written from the handle's bytes.
	put := func(p []byte) {
		if err != nil {
			return
		}
		if b.Len()+len(p) > pageChunk && b.Len() > 0 {
			_, err = w.Write(b.Bytes())
			b.Reset()
		}
		if len(p) >= pageChunk && err == nil {
			_, err = w.Write(p)
			return
		}
		b.Write(p)
	}
	put(lead)
	b.WriteString(open)
	for i, e := range page.Entries {
		if i > 0 {
			put(comma)
		}
		put(e.Raw())
	}
	put(end)
	if err == nil && b.Len() > 0 {
		_, _ = w.Write(b.Bytes())
	}
}

var comma = []byte{','}

// chunkBuffer returns an empty buffer of a chunk's size (pageChunk), from the
// pool when there is one.
func (s *Server) chunkBuffer() *bytes.Buffer {
	if b, ok := s.chunks.Get().(*bytes.Buffer); ok {
		b.Reset()
		return b
	}
	return bytes.NewBuffer(make([]byte, 0, pageChunk))
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
