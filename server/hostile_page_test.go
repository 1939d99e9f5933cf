package server_test

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/server"
)

// TestHostile_SlowPageReadersHoldLittle: a client that asks for pages and
// does not read them holds little of the server's memory however many it asks
// for at once. Each page (up to Config.MaxPageBytes, 4 MiB by default) was
// copied whole into a buffer of its request, held until the client read it or
// the write timed out: 200 such requests of one owner held 700 MiB, and
// nothing bounded their number.
func TestHostile_SlowPageReadersHoldLittle(t *testing.T) {
	const conns, entries, size = 24, 40, 200 << 10
	ts := newServer(t, backends[0].new(t), server.Config{})
	c := bigSession(t, ts, entries, size)
	must(c.do("GET", "/v1/sessions/s/entries", nil)) // the handle is cached: its entries are not the requests'
	before := heapAlloc()
	tok := tokenFor(t, "acme", "alice")
	for range conns {
		conn := slowGet(t, ts, tok, "/v1/sessions/s/entries")
		defer conn.Close()
		// The page's first byte came: its request wrote its body, and waits
		// for the client to read the rest.
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
		_, err := conn.Read(make([]byte, 1))
		require.NoError(t, err)
	}
	held := int64(heapAlloc()) - int64(before)
	require.Less(t, held, int64(conns<<20), "%d unread pages hold %d MiB", conns, held>>20)
}

// bigSession makes session s of acme's alice: entries messages of size bytes
// each, a chain. It returns alice's client.
func bigSession(t *testing.T, ts *testServer, entries, size int) *client {
	t.Helper()
	c := ts.as(t, "acme", "alice")
	must(c.do("POST", "/v1/sessions", map[string]any{"id": "s"}))
	parent := ""
	for i := range entries {
		id := fmt.Sprintf("e%d", i)
		must(c.do("POST", "/v1/sessions/s/entries", appendReq(parent, msg(id, parent, "user", strings.Repeat("x", size)))))
		parent = id
	}
	return c
}

// slowGet sends GET path with token tok on a new connection whose receive
// buffer is small, so the server soon waits for the client to read; the
// caller closes it.
func slowGet(t *testing.T, ts *testServer, tok, path string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	require.NoError(t, err)
	require.NoError(t, conn.(*net.TCPConn).SetReadBuffer(4096))
	_, err = fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", path, tok)
	require.NoError(t, err)
	return conn
}
