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
	page := s.boundPage(hd.sess.Page(after, limit))
	b := s.pageBuffer(0, page)
	defer s.putPageBuffer(b)
	appendPage(b, page, after)
	b.WriteByte('\n')
	writeBody(w, b.Bytes())
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

// pageSize is the size of page's JSON (appendPage), give or take the numbers.
func pageSize(page repository.Page) int {
	size := 128 + len(page.Head) // the envelope
	for _, e := range page.Entries {
		size += len(e.Raw()) + 1
	}
	return size
}

// appendPage writes page, the entries after sequence number after, as the
// entries route answers it: {"entries":[…],"nextSeq":…,"entryCount":…,"head":…}.
func appendPage(b *bytes.Buffer, page repository.Page, after int) {
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
	b.WriteByte('}')
}

// writeBody answers 200 with the JSON body.
func writeBody(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write(body)
}

// maxPooledPage is the largest page body kept for reuse, room for a page of the
// default bound (DefaultMaxPageBytes) and its envelope: a page made large by one
// large entry (a page holds one, whatever its size) is left to the collector.
const maxPooledPage = 2 * DefaultMaxPageBytes

// pageBuffer returns an empty buffer for a body of extra bytes and page: one
// from the pool when there is one (it grows as the page is written), else one
// of the page's size. A page is up to megabytes (Config.MaxPageBytes), and a
// fresh buffer for each was a large allocation, cleared and collected, per
// request.
func (s *Server) pageBuffer(extra int, page repository.Page) *bytes.Buffer {
	if b, ok := s.pages.Get().(*bytes.Buffer); ok {
		b.Reset()
		return b
	}
	return bytes.NewBuffer(make([]byte, 0, extra+pageSize(page)))
}

// putPageBuffer gives b back to the pool once its page is written.
func (s *Server) putPageBuffer(b *bytes.Buffer) {
	if b.Cap() <= maxPooledPage {
		s.pages.Put(b)
	}
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
