package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/server"
)

// TestCachedHandlesFollowTheBucket appends through server A, which keeps session
// handles between appends, while server B changes the same sessions (appends,
// delete, re-create): A's appends always act on what the bucket holds. It runs
// with caching off, with room for one session (two sessions evict each other),
// and with the default.
func TestCachedHandlesFollowTheBucket(t *testing.T) {
	for _, be := range backends {
		for _, max := range []int{-1, 1, 0} {
			t.Run(be.name+"/max="+itoa(max), func(t *testing.T) {
				b := be.new(t)
				a := newServer(t, b, server.Config{MaxCachedSessions: max}).as(t, "acme", "alice")
				bb := newServer(t, b, server.Config{}).as(t, "acme", "alice")
				for _, id := range []string{"s1", "s2"} {
					p := "/v1/sessions/" + id + "/entries"
					must(a.do("POST", "/v1/sessions", map[string]any{"id": id}))
					must(a.do("POST", p, appendReq("", msg("u1", "", "user", "one"))))
					must(bb.do("POST", p, appendReq("u1", msg("u2", "u1", "user", "two"))))
					code, body := a.do("POST", p, appendReq("u1", msg("x", "u1", "user", "stale")))
					require.Equal(t, http.StatusConflict, code, string(body))
					require.Equal(t, str("u2"), decode[errResp](t, body).Error.Head)
					must(a.do("POST", p, appendReq("u2", msg("u3", "u2", "user", "three"))))
					// A retry through B of A's append is recognised.
					must(bb.do("POST", p, appendReq("u2", msg("u3", "u2", "user", "three"))))
					code, body = a.do("POST", p, appendReq("u3", msg("u2", "u1", "user", "other bytes")))
					require.Equal(t, http.StatusConflict, code, string(body))
					require.Equal(t, server.CodeEntryConflict, decode[errResp](t, body).Error.Code)

					// Deleted through B: gone for A.
					code, _ = bb.do("DELETE", "/v1/sessions/"+id, nil)
					require.Equal(t, http.StatusNoContent, code)
					code, body = a.do("POST", p, appendReq("u3", msg("u4", "u3", "user", "after delete")))
					require.Equal(t, http.StatusNotFound, code, string(body))
					// Re-created through B: A appends to the new session.
					must(bb.do("POST", "/v1/sessions", map[string]any{"id": id}))
					code, body = a.do("POST", p, appendReq("", msg("n1", "", "user", "new")))
					require.Equal(t, http.StatusOK, code, string(body))
					pg := decode[page](t, must(bb.do("GET", p, nil)))
					require.Equal(t, 1, pg.EntryCount)
					require.Equal(t, str("n1"), pg.Head)
				}
			})
		}
	}
}

// TestCachedHandlesBoundedByBytes: the handles a server keeps between requests
// hold at most Config.MaxCachedBytes of entries in all (the one used last
// excepted), so that a few large sessions cannot fill the server's memory
// however many handles the count bound allows; a session dropped from the
// cache is read again, whole, by its next request.
func TestCachedHandlesBoundedByBytes(t *testing.T) {
	const bound = 64 << 10
	ts := newServer(t, backends[0].new(t), server.Config{MaxCachedBytes: bound})
	c := ts.as(t, "acme", "alice")
	big := strings.Repeat("x", 20<<10) // three such entries and the bound is passed
	for i := range 8 {
		id := "s" + itoa(i)
		must(c.do("POST", "/v1/sessions", map[string]any{"id": id}))
		must(c.do("POST", "/v1/sessions/"+id+"/entries", appendReq("", msg("u1", "", "user", big))))
		must(c.do("GET", "/v1/sessions/"+id+"/entries", nil))
		n, held := server.CachedSessions(ts.srv)
		require.GreaterOrEqual(t, n, 1, "the session used last is kept")
		require.LessOrEqual(t, held, int64(bound), "%d handles hold %d bytes", n, held)
	}
	// One session over the bound alone is kept: it is the one used last.
	must(c.do("POST", "/v1/sessions", map[string]any{"id": "huge"}))
	must(c.do("POST", "/v1/sessions/huge/entries", appendReq("", msg("u1", "", "user", strings.Repeat("y", 2*bound)))))
	n, held := server.CachedSessions(ts.srv)
	require.Equal(t, 1, n)
	require.Greater(t, held, int64(bound))
	// Every session still answers whole.
	for i := range 8 {
		p := decode[page](t, must(c.do("GET", "/v1/sessions/s"+itoa(i)+"/entries", nil)))
		require.Equal(t, 1, p.EntryCount)
	}
}
