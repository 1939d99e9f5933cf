package server_test

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/server"
)

// TestHostile_NonCanonicalPaths: a request whose path the router would clean
// (dot segments, repeated slashes), and a CONNECT, answer 404 unknown_route in
// the JSON error envelope, as every path the document does not list. The router
// answered the first 307 in text/html, to the cleaned path (so that a client
// following it appended to s1 what it sent to /v1/sessions/x/../s1/entries),
// and a CONNECT 404 in plain text. Each request is sent as written (a client would remove the dot
// segments itself), and the store is left as it was.
func TestHostile_NonCanonicalPaths(t *testing.T) {
	ts := newServer(t, backends[0].new(t), server.Config{})
	c := ts.as(t, "acme", "alice")
	must(c.do("POST", "/v1/sessions", map[string]any{"id": "s1"}))
	body := `{"expectedHead":null,"entries":[{"type":"custom","id":"e1","parentId":null,"customType":"x"}]}`
	for _, tc := range []struct{ name, method, target string }{
		{"dot-dot segment", "GET", "/v1/sessions/x/../s1"},
		{"dot-dot into another session's entries", "POST", "/v1/sessions/x/../s1/entries"},
		{"dot segment", "GET", "/v1/sessions/s1/./entries"},
		{"dot segment last", "GET", "/v1/sessions/."},
		{"repeated slash", "GET", "//v1/sessions"},
		{"repeated slash inside", "DELETE", "/v1//sessions/s1"},
		{"dot-dot above the root", "GET", "/../v1/sessions"},
		{"connect", "CONNECT", "127.0.0.1:80"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
			require.NoError(t, err)
			defer conn.Close()
			_, err = fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
				tc.method, tc.target, tokenFor(t, "acme", "alice"), len(body), body)
			require.NoError(t, err)
			status, h, resp := readResponse(t, conn)
			require.Equal(t, http.StatusNotFound, status, string(resp))
			requireEnvelope(t, status, h, resp, server.CodeUnknownRoute)
		})
	}
	meta := decode[server.SessionMetadata](t, must(c.do("GET", "/v1/sessions/s1", nil)))
	require.Zero(t, meta.EntryCount, "no request appended")
}

// TestHostile_UnparsedRequests pins the one exception openapi.yaml states to
// its JSON error envelope: a request net/http cannot parse is answered by it,
// before any handler runs, in text/plain, and the connection closed. A Go
// release that changes these answers shows here, for the document to follow.
func TestHostile_UnparsedRequests(t *testing.T) {
	ts := newServer(t, backends[0].new(t), server.Config{})
	for _, tc := range []struct {
		name, head string
		status     int
	}{
		{"repeated Content-Length", "POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n", 400},
		{"Content-Length not a number", "POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n", 400},
		{"no Host", "GET /v1/sessions HTTP/1.1\r\n", 400},
		{"malformed percent-encoding", "GET /v1/sessions/% HTTP/1.1\r\nHost: x\r\n", 400},
		{"headers over 1 MiB", "GET /v1/sessions HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 1<<20+8192) + "\r\n", 431},
		{"unknown Transfer-Encoding", "POST /v1/sessions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n", 501},
		{"HTTP/2.0 request line", "GET /v1/sessions HTTP/2.0\r\nHost: x\r\n", 505},
		{"unknown Expect", "POST /v1/sessions HTTP/1.1\r\nHost: x\r\nExpect: x\r\nContent-Length: 0\r\n", 417},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
			require.NoError(t, err)
			defer conn.Close()
			_, err = fmt.Fprintf(conn, "%s\r\n", tc.head)
			require.NoError(t, err)
			status, h, resp := readResponse(t, conn)
			require.Equal(t, tc.status, status, string(resp))
			if len(resp) > 0 {
				require.Equal(t, "text/plain; charset=utf-8", h.Get("Content-Type"))
			}
		})
	}
}
