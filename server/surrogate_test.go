package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/server"
)

// TestLoneSurrogateIDs: an entry id holding a lone UTF-16 surrogate ("\ud800",
// an id of its own to Pi, apart from "\udc00" and "\ufffd") comes back in every
// answer as it was sent: the append's head, the metadata's head, a stale_head
// conflict's head and an entry_conflict's entryId. The store keeps such an id
// as its WTF-8 bytes, which encoding/json wrote as "\ufffd\ufffd\ufffd", so a
// client that sent the head back as its expectedHead was refused for ever;
// and a fork at that id forks at that entry.
func TestLoneSurrogateIDs(t *testing.T) {
	c := newServer(t, backends[0].new(t), server.Config{}).as(t, "acme", "alice")
	must(c.do("POST", "/v1/sessions", map[string]any{"id": "s", "cwd": "/w", "strict": true}))
	const (
		first  = `{"type":"message","id":"\ud800","parentId":null,"timestamp":"2026-03-01T12:00:00.000Z","message":{"role":"user","content":"a","timestamp":1}}`
		second = `{"type":"message","id":"\udc00","parentId":"\ud800","timestamp":"2026-03-01T12:00:01.000Z","message":{"role":"user","content":"b","timestamp":1}}`
		third  = `{"type":"message","id":"m3","parentId":"\udc00","timestamp":"2026-03-01T12:00:02.000Z","message":{"role":"user","content":"c","timestamp":1}}`
		other  = `{"type":"message","id":"\ud800","parentId":null,"timestamp":"2026-03-01T12:00:00.000Z","message":{"role":"user","content":"other bytes","timestamp":1}}`
	)
	code, body := c.do("POST", "/v1/sessions/s/entries", `{"expectedHead":null,"entries":[`+first+`]}`)
	require.Equal(t, http.StatusOK, code, string(body))
	require.JSONEq(t, `{"head":"\ud800"}`, string(body))
	require.Contains(t, string(body), `"\ud800"`)

	// The head as answered, sent back.
	code, body = c.do("POST", "/v1/sessions/s/entries", `{"expectedHead":"\ud800","entries":[`+second+`]}`)
	require.Equal(t, http.StatusOK, code, string(body))
	require.Contains(t, string(body), `{"head":"\udc00"}`)

	code, body = c.do("GET", "/v1/sessions/s", nil)
	require.Equal(t, http.StatusOK, code, string(body))
	require.Contains(t, string(body), `"head":"\udc00"`)
	require.Contains(t, string(body), `"entryCount":2`)

	code, body = c.do("POST", "/v1/sessions/s/entries", `{"expectedHead":"\ud800","entries":[`+third+`]}`)
	require.Equal(t, http.StatusConflict, code, string(body))
	require.Contains(t, string(body), `"head":"\udc00"`, "a stale_head names the head")

	code, body = c.do("POST", "/v1/sessions/s/entries", `{"expectedHead":"\udc00","entries":[`+other+`]}`)
	require.Equal(t, http.StatusConflict, code, string(body))
	require.Contains(t, string(body), `"entryId":"\ud800"`, "an entry_conflict names the entry")

	code, body = c.do("POST", "/v1/sessions/s/fork", `{"id":"f","entryId":"\ud800"}`)
	require.Equal(t, http.StatusCreated, code, string(body))
	require.Contains(t, string(body), `"head":"\ud800"`, "the fork ends at the entry named")
	require.Contains(t, string(body), `"entryCount":1`)
}
