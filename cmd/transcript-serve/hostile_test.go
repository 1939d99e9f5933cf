package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestHostile_HeaderBytesBounded: the server refuses a header section over
// --max-header-bytes (64 KiB by default: room for a large token) with 431,
// where net/http's default let every connection, unauthenticated, make it hold
// a megabyte while its headers arrived. A request with a 16 KiB header is
// served.
func TestHostile_HeaderBytesBounded(t *testing.T) {
	p := start(t, "file://"+t.TempDir())
	tok := mint(t, "acme", "alice")
	for _, tc := range []struct {
		pad    int
		status int
	}{
		{16 << 10, http.StatusOK},
		{100 << 10, http.StatusRequestHeaderFieldsTooLarge},
	} {
		conn, err := net.Dial("tcp", p.addr)
		require.NoError(t, err)
		defer conn.Close()
		_, err = fmt.Fprintf(conn, "GET /v1/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nX-Pad: %s\r\nConnection: close\r\n\r\n",
			tok, strings.Repeat("a", tc.pad))
		require.NoError(t, err)
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, tc.status, resp.StatusCode, "a header of %d bytes", tc.pad)
	}
}
