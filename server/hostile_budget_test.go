package server_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/server"
)

// stalledAppend sends, on a connection of its own, an append of body as owner
// tenant/user but for its last byte, and returns the connection.
func stalledAppend(t *testing.T, ts *testServer, tenant, user, session string, body []byte) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	_, err = fmt.Fprintf(conn, "POST /v1/sessions/%s/entries HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		session, tokenFor(t, tenant, user), len(body), body[:len(body)-1])
	require.NoError(t, err)
	return conn
}

// readResponse reads the response the server sent on conn.
func readResponse(t *testing.T, conn net.Conn) (int, http.Header, []byte) {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, data
}

// TestHostile_BodyBudgetPerOwner: one owner's concurrent large (or slow)
// appends cannot take the server's whole body budget
// (Config.MaxBodyBytesInFlight) from the other owners. Before the budget had a
// share per owner (Config.MaxBodyBytesPerOwner), an owner holding a few
// stalled bodies had every other owner's append, however small, answered 503
// until its bodies timed out: one client denied service to all.
func TestHostile_BodyBudgetPerOwner(t *testing.T) {
	const max = 1 << 20
	ts := newServer(t, backends[0].new(t), server.Config{MaxBodyBytes: max, MaxBodyBytesInFlight: 2 * max, BodyTimeout: time.Minute})
	mallory, alice := ts.as(t, "evil", "mallory"), ts.as(t, "acme", "alice")
	must(mallory.do("POST", "/v1/sessions", map[string]any{"id": "s"}))
	must(alice.do("POST", "/v1/sessions", map[string]any{"id": "s"}))
	big := func(id string) []byte {
		body, err := json.Marshal(appendReq("", msg(id, "", "user", strings.Repeat("x", max-300))))
		require.NoError(t, err)
		require.Less(t, len(body), max)
		return body
	}
	body := big("m1")

	// Mallory's first body arrives but its last byte: the server holds it.
	first := stalledAppend(t, ts, "evil", "mallory", "s", body)
	require.Eventually(t, func() bool { return server.BodyBytesInFlight(ts.srv) == int64(len(body)) },
		10*time.Second, 5*time.Millisecond)
	// Her second would take her past her share (half the budget): 503 at once,
	// not held until its body times out.
	second := stalledAppend(t, ts, "evil", "mallory", "s", body)
	status, h, resp := readResponse(t, second)
	require.Equal(t, http.StatusServiceUnavailable, status, string(resp))
	requireEnvelope(t, status, h, resp, server.CodeUnavailable)
	require.NotEmpty(t, h.Get("Retry-After"))
	require.Equal(t, int64(len(body)), server.BodyBytesInFlight(ts.srv), "a refused body is given back")

	// Alice's append of as large a body is served meanwhile.
	status, _, resp = alice.send(rawReq{method: "POST", path: "/v1/sessions/s/entries", contentType: "application/json", body: string(big("a1"))})
	require.Equal(t, http.StatusOK, status, string(resp))

	// Mallory's first ends well.
	_, err := first.Write(body[len(body)-1:])
	require.NoError(t, err)
	status, _, resp = readResponse(t, first)
	require.Equal(t, http.StatusOK, status, string(resp))
	require.Zero(t, server.BodyBytesInFlight(ts.srv))
}
