package main

import (
	"context"
	"io"
	"math"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/server"
)

// countingListener counts the connections its Accept returned.
type countingListener struct {
	net.Listener
	accepted atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// limitedServer serves, through a limitListener of n connections, /slow (which
// answers once release is closed, after sending on entered) and /healthz.
func limitedServer(t *testing.T, n int) (addr string, inner *countingListener, entered chan struct{}, release chan struct{}) {
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	inner = &countingListener{Listener: tl}
	ln := newLimitListener(inner, n)
	entered, release = make(chan struct{}, 64), make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	hs := &http.Server{Handler: mux, ConnState: ln.ConnState, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
	})
	return tl.Addr().String(), inner, entered, release
}

// get sends GET path with c and reads the answer.
func get(c *http.Client, addr, path string) (int, error) {
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// TestLimitListener_PastTheLimitWaits: nothing bounded the connections the
// server took, each a goroutine and its buffers. With --max-connections 2 and
// two requests in progress, twenty more connections are not served (the
// server has accepted at most one of them, which it holds unserved: the rest
// wait in the listen backlog) until a slot frees; then every one is answered.
func TestLimitListener_PastTheLimitWaits(t *testing.T) {
	addr, inner, entered, release := limitedServer(t, 2)
	fresh := func() *http.Client {
		return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 20 * time.Second}
	}
	slow := make(chan error, 2)
	for range 2 {
		go func() { _, err := get(fresh(), addr, "/slow"); slow <- err }()
	}
	<-entered
	<-entered

	const waiting = 20
	answered := make(chan int, waiting)
	for range waiting {
		go func() {
			code, err := get(fresh(), addr, "/healthz")
			if err != nil {
				code = -1
			}
			answered <- code
		}()
	}
	select {
	case code := <-answered:
		t.Fatalf("a connection past the limit was served (%d) while the slots were taken", code)
	case <-time.After(300 * time.Millisecond):
	}
	require.LessOrEqual(t, inner.accepted.Load(), int32(3), "the two served and at most one held")

	close(release)
	for range 2 {
		require.NoError(t, <-slow)
	}
	for range waiting {
		require.Equal(t, http.StatusOK, <-answered)
	}
}

// TestLimitListener_IdleConnectionsMakeRoom: keep-alive connections idle
// between requests would hold every slot for the idle timeout (two minutes),
// and a probe wait that long; they give their slots up to a waiting client.
func TestLimitListener_IdleConnectionsMakeRoom(t *testing.T) {
	addr, _, _, _ := limitedServer(t, 2)
	for range 2 {
		keep := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
		code, err := get(keep, addr, "/healthz")
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code)
		// keep's connection stays open, idle.
	}
	probe := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	code, err := get(probe, addr, "/healthz")
	require.NoError(t, err, "a probe past the limit, with only idle connections holding it")
	require.Equal(t, http.StatusOK, code)
}

// TestMaxConnections: transcript-serve --max-connections 2 serves two
// connections; a health probe past them waits (here: until its client gives
// up) and is answered once one of them closes.
func TestMaxConnections(t *testing.T) {
	p := start(t, "file://"+t.TempDir(), "--max-connections", "2")
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", p.addr)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		// Half a request: the connection holds its slot, as one in progress does.
		_, err = io.WriteString(c, "GET /healthz HTTP/1.1\r\n")
		require.NoError(t, err)
		held = append(held, c)
	}
	probe := func(timeout time.Duration) (int, error) {
		return get(&http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: timeout}, p.addr, "/healthz")
	}
	_, err := probe(500 * time.Millisecond)
	require.Error(t, err, "a probe past the limit waits")
	require.NoError(t, held[0].Close())
	code, err := probe(5 * time.Second)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
}

// TestMaxStreamsFor: event streams get four fifths of the connections
// (rounded down), at most the server's default bound and at least one.
func TestMaxStreamsFor(t *testing.T) {
	for _, tc := range []struct{ conns, streams int }{
		{1, 1}, {2, 1}, {4, 3}, {5, 4}, {6, 4}, {100, 80}, {math.MaxInt, server.DefaultMaxStreams}, {defaultMaxConnections, server.DefaultMaxStreams}, {1 << 20, server.DefaultMaxStreams},
	} {
		require.Equal(t, tc.streams, maxStreamsFor(tc.conns), "%d connections", tc.conns)
	}
}

// TestStreamsLeaveRoomForProbes: event streams hold their connections for as
// long as they last; with --max-connections 5, four streams are served, a
// fifth is answered 503, and a health probe is still answered at once.
func TestStreamsLeaveRoomForProbes(t *testing.T) {
	p := start(t, "file://"+t.TempDir(), "--max-connections", "5")
	tok := mint(t, "acme", "alice")
	code, body := call(t, p.addr, tok, "POST", "/v1/sessions", `{"id":"s"}`)
	require.Equal(t, http.StatusCreated, code, body)
	open := func() *http.Response {
		ctx, cancel := context.WithCancel(t.Context())
		req, err := http.NewRequestWithContext(ctx, "GET", "http://"+p.addr+"/v1/sessions/s/events", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { cancel(); _ = resp.Body.Close() })
		return resp
	}
	for range 4 {
		require.Equal(t, http.StatusOK, open().StatusCode)
	}
	require.Equal(t, http.StatusServiceUnavailable, open().StatusCode, "a fifth stream")
	code, err := get(&http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}, p.addr, "/healthz")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
}
