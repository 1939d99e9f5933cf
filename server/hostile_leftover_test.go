package server_test

import (
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/server"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// TestHostile_CreateOverLeftovers: a default-mode append that races the
// deletion of its session may leave its segment behind (repository.Delete):
// objects without the session's header, which every read takes for no
// session. A create of that id answered 404 not_found, a status the document
// does not list for a create; then 409 exists, while every read and a DELETE
// said not found. The leftovers are no session for a create either: it removes
// them and succeeds, and the new session holds nothing of them.
func TestHostile_CreateOverLeftovers(t *testing.T) {
	b := backends[0].new(t)
	ts := newServer(t, b, server.Config{})
	c := ts.as(t, "acme", "alice")
	must(c.do("POST", "/v1/sessions", map[string]any{"id": "s", "strict": false}))
	must(c.do("POST", "/v1/sessions/s/entries", appendReq("", msg("u1", "", "user", "hi"))))

	// What a racing append leaves: its segment, without the header's.
	var keys []string
	require.NoError(t, b.List(t.Context(), bucket.ListOptions{}, func(oi bucket.ObjectInfo) error {
		if strings.Contains(oi.Key, "/s/") {
			keys = append(keys, oi.Key)
		}
		return nil
	}))
	require.Len(t, keys, 2, "the header's segment and the append's")
	sort.Strings(keys)
	require.NoError(t, b.Delete(t.Context(), keys[0]))
	// A server that never served the session (this one holds its handle).
	c = newServer(t, b, server.Config{}).as(t, "acme", "alice")
	code, body := c.do("GET", "/v1/sessions/s", nil)
	require.Equal(t, http.StatusNotFound, code, string(body))

	code, body = c.do("POST", "/v1/sessions", map[string]any{"id": "s", "strict": false})
	require.Equal(t, http.StatusCreated, code, string(body))
	require.Zero(t, decode[server.SessionMetadata](t, body).EntryCount)
	code, body = c.do("GET", "/v1/sessions/s/entries", nil)
	require.Equal(t, http.StatusOK, code, string(body))
	require.Len(t, decode[page](t, body).Entries, 0, "nothing of the leftovers: %s", body)
}
