package server_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/server"
)

// fakeClock is a clock that moves only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// pageOf reads the page of limit entries after sequence number after of
// session id through c and returns its status and, on 200, the page and the
// ids of its entries.
func pageOf(t *testing.T, c *client, id string, after, limit int) (int, page, []string) {
	t.Helper()
	code, body := c.do("GET", fmt.Sprintf("/v1/sessions/%s/entries?after=%d&limit=%d", id, after, limit), nil)
	if code != http.StatusOK {
		return code, page{}, nil
	}
	p := decode[page](t, body)
	ids := []string{}
	for _, e := range p.Entries {
		ids = append(ids, decode[struct{ ID string }](t, e).ID)
	}
	return code, p, ids
}

// TestHeldPagesAndTheBucket: two servers on one bucket, one reading (with a
// clock the test moves), the other changing the session. A page of a strict
// session that lies inside what the reader's handle holds, within HeldPageAge
// of the handle's last read, costs no request to the bucket; its entries are
// those the bucket holds at its sequence numbers, while its entryCount and head,
// and the session's deletion or re-creation, show once the age has passed or a
// page reaches the end of what the handle holds. A default-mode session reads
// the bucket on every page.
func TestHeldPagesAndTheBucket(t *testing.T) {
	for _, be := range backends[:2] {
		t.Run(be.name, func(t *testing.T) {
			b := be.new(t)
			cb, requests := countingBucket(t, b)
			clock := &fakeClock{t: time.Unix(1_000_000_000, 0)}
			rs := newServer(t, cb, server.Config{})
			server.SetHeldPageClock(rs.srv, server.HeldPageAge, clock.Now)
			reader := rs.as(t, "acme", "alice")
			writer := newServer(t, b, server.Config{}).as(t, "acme", "alice")
			must(writer.do("POST", "/v1/sessions", map[string]any{"id": "s"}))
			want := appendChain(t, writer, "s", 0, 20)

			// Read page by page: only the page that reaches the end of what the
			// handle holds and the empty one read the bucket (the head each).
			require.Equal(t, 20, decode[metadata](t, must(reader.do("GET", "/v1/sessions/s", nil))).EntryCount)
			before := requests()
			got, pages := readAll(t, reader, "s", 5)
			require.Equal(t, want, got)
			require.Equal(t, 5, pages)
			require.Equal(t, 2, requests()-before, "the last page and the empty one")

			// An append through the other server: a held page does not show it
			// until the age has passed; its entries are the same either way.
			want = append(want, appendChain(t, writer, "s", 20, 21)...)
			requireFirstPage(t, reader, "s", want[:5], 20, "m019") // as of the handle's last read
			clock.Advance(server.HeldPageAge)
			requireFirstPage(t, reader, "s", want[:5], 21, "m020")

			// Deleted and created again with other entries: within the age a held
			// page answers what the handle holds; past it, the new session.
			code, _ := writer.do("DELETE", "/v1/sessions/s", nil)
			require.Equal(t, http.StatusNoContent, code)
			must(writer.do("POST", "/v1/sessions", map[string]any{"id": "s"}))
			again := appendChainAfter(writer, "s", "", "x", 10)
			requireFirstPage(t, reader, "s", want[:5], 21, "m020") // within the age: what the handle holds
			clock.Advance(server.HeldPageAge)
			requireFirstPage(t, reader, "s", again[:5], 10, "x09")

			// Deleted: a page that reaches the end of what the handle holds
			// answers 404 at once, and so does every page after it.
			code, _ = writer.do("DELETE", "/v1/sessions/s", nil)
			require.Equal(t, http.StatusNoContent, code)
			requireFirstPage(t, reader, "s", again[:5], 10, "x09") // within the age
			code, _, _ = pageOf(t, reader, "s", 5, 5)
			require.Equal(t, http.StatusNotFound, code)
			code, _, _ = pageOf(t, reader, "s", 0, 5)
			require.Equal(t, http.StatusNotFound, code)

			// A default-mode session: every page reads the bucket.
			must(writer.do("POST", "/v1/sessions", map[string]any{"id": "d", "strict": false}))
			appendChain(t, writer, "d", 0, 10)
			require.Equal(t, 10, decode[metadata](t, must(reader.do("GET", "/v1/sessions/d", nil))).EntryCount)
			appendChain(t, writer, "d", 10, 11)
			requireFirstPage(t, reader, "d", want[:5], 11, "m010")
		})
	}
}

// requireFirstPage reads the page of 5 entries after 0 of session id through c
// and requires its entries' ids, its entryCount and its head.
func requireFirstPage(t *testing.T, c *client, id string, ids []string, count int, head string) {
	t.Helper()
	code, p, got := pageOf(t, c, id, 0, 5)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, ids, got)
	require.Equal(t, count, p.EntryCount)
	require.Equal(t, str(head), p.Head)
}

// appendChainAfter appends n entries prefix00, ... to session id through c,
// the first after parent, and returns their ids.
func appendChainAfter(c *client, id, parent, prefix string, n int) []string {
	var ids []string
	for i := range n {
		eid := fmt.Sprintf("%s%02d", prefix, i)
		must(c.do("POST", "/v1/sessions/"+id+"/entries", appendReq(parent, msg(eid, parent, "user", eid))))
		ids, parent = append(ids, eid), eid
	}
	return ids
}
