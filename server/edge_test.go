package server_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/s3test"
	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/server"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/s3bucket"
)

// rawReq is one HTTP request as a client may send it.
type rawReq struct {
	method, path string
	contentType  string // "" for no Content-Type header
	encoding     string // "" for no Content-Encoding header
	body         string
	noAuth       bool
}

// send sends rq as c's owner and returns the status, headers and body.
func (c *client) send(rq rawReq) (int, http.Header, []byte) {
	c.t.Helper()
	req, err := http.NewRequestWithContext(c.t.Context(), rq.method, c.base+rq.path, strings.NewReader(rq.body))
	require.NoError(c.t, err)
	if !rq.noAuth {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if rq.contentType != "" {
		req.Header.Set("Content-Type", rq.contentType)
	}
	if rq.encoding != "" {
		req.Header.Set("Content-Encoding", rq.encoding)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	return resp.StatusCode, resp.Header, data
}

// requireEnvelope requires body to be the JSON error envelope with code, whose
// code is one openapi.yaml lists.
func requireEnvelope(t *testing.T, status int, h http.Header, body []byte, code server.ErrorCode) errResp {
	t.Helper()
	require.Equal(t, "application/json", h.Get("Content-Type"), "status %d: %s", status, body)
	e := decode[errResp](t, body)
	require.Equal(t, code, e.Error.Code, string(body))
	require.NotEmpty(t, e.Error.Message)
	require.Contains(t, server.ErrorCodes(), e.Error.Code)
	return e
}

// TestEdge refuses at the edge, in the JSON error envelope, what is not a valid
// request, and answers what is: a body of another type, trailing data, unknown
// fields and type errors name what is wrong; unknown routes and methods answer
// 404 and 405; a create of an existing id with other fields is a 409; conflicts
// name the entry; ids the command line accepts are served.
func TestEdge(t *testing.T) {
	const jsonType = "application/json"
	appendBody := func(head string, entries ...json.RawMessage) string {
		b, _ := json.Marshal(appendReq(head, entries...))
		return string(b)
	}
	cases := []struct {
		name   string
		req    rawReq
		status int
		code   server.ErrorCode // "" for success
		field  string
		check  func(t *testing.T, h http.Header, e errResp)
	}{
		{name: "create with a form body (curl -d without a type)", req: rawReq{method: "POST", path: "/v1/sessions", contentType: "application/x-www-form-urlencoded", body: `{"id":"x"}`},
			status: 415, code: server.CodeUnsupportedMediaType},
		{name: "create with a body and no type", req: rawReq{method: "POST", path: "/v1/sessions", body: `{"id":"x"}`},
			status: 415, code: server.CodeUnsupportedMediaType},
		{name: "append as text/plain", req: rawReq{method: "POST", path: "/v1/sessions/s1/entries", contentType: "text/plain", body: appendBody("", msg("u1", "", "user", "x"))},
			status: 415, code: server.CodeUnsupportedMediaType},
		{name: "create with a JSON subtype", req: rawReq{method: "POST", path: "/v1/sessions", contentType: "application/vnd.x+json; charset=utf-8", body: `{"id":"sub","cwd":"/w"}`},
			status: 201},
		{name: "create without a body", req: rawReq{method: "POST", path: "/v1/sessions"}, status: 201},
		{name: "trailing data", req: rawReq{method: "POST", path: "/v1/sessions", contentType: jsonType, body: `{"id":"t"} garbage`},
			status: 400, code: server.CodeInvalidRequest},
		{name: "two JSON values", req: rawReq{method: "POST", path: "/v1/sessions", contentType: jsonType, body: `{"id":"t"}{"id":"u"}`},
			status: 400, code: server.CodeInvalidRequest},
		{name: "unknown field", req: rawReq{method: "POST", path: "/v1/sessions", contentType: jsonType, body: `{"id":"t","cwdd":"/w"}`},
			status: 400, code: server.CodeInvalidRequest, field: "cwdd"},
		{name: "type error in create", req: rawReq{method: "POST", path: "/v1/sessions", contentType: jsonType, body: `{"id":"t","strict":"yes"}`},
			status: 400, code: server.CodeInvalidRequest, field: "strict"},
		{name: "type error in append", req: rawReq{method: "POST", path: "/v1/sessions/s1/entries", contentType: jsonType, body: `{"expectedHead":5,"entries":[]}`},
			status: 400, code: server.CodeInvalidRequest, field: "expectedHead"},
		{name: "body not an object", req: rawReq{method: "POST", path: "/v1/sessions/s1/fork", contentType: jsonType, body: `["a1"]`},
			status: 400, code: server.CodeInvalidRequest},
		{name: "unknown field in fork", req: rawReq{method: "POST", path: "/v1/sessions/s1/fork", contentType: jsonType, body: `{"entryId":"a1","at":"x"}`},
			status: 400, code: server.CodeInvalidRequest, field: "at"},
		{name: "malformed", req: rawReq{method: "POST", path: "/v1/sessions", contentType: jsonType, body: `{"id":`},
			status: 400, code: server.CodeInvalidRequest},
		{name: "unknown route", req: rawReq{method: "GET", path: "/v1/nope"}, status: 404, code: server.CodeUnknownRoute},
		{name: "unknown route without credentials", req: rawReq{method: "GET", path: "/nope", noAuth: true}, status: 404, code: server.CodeUnknownRoute},
		{name: "unknown method", req: rawReq{method: "PUT", path: "/v1/sessions"}, status: 405, code: server.CodeMethodNotAllowed,
			check: func(t *testing.T, h http.Header, _ errResp) { require.Equal(t, "GET, HEAD, POST", h.Get("Allow")) }},
		{name: "unknown method of a session", req: rawReq{method: "PATCH", path: "/v1/sessions/s1"}, status: 405, code: server.CodeMethodNotAllowed,
			check: func(t *testing.T, h http.Header, _ errResp) { require.Equal(t, "DELETE, GET, HEAD", h.Get("Allow")) }},
		{name: "create again with the same fields", req: rawReq{method: "POST", path: "/v1/sessions", contentType: jsonType, body: `{"id":"s1","cwd":"/w"}`},
			status: 200},
		{name: "create again with another cwd", req: rawReq{method: "POST", path: "/v1/sessions", contentType: jsonType, body: `{"id":"s1","cwd":"/other"}`},
			status: 409, code: server.CodeExists, field: "cwd",
			check: func(t *testing.T, _ http.Header, e errResp) {
				require.Equal(t, `session "s1" exists with cwd "/w", not "/other"`, e.Error.Message)
			}},
		{name: "create again not strict", req: rawReq{method: "POST", path: "/v1/sessions", contentType: jsonType, body: `{"id":"s1","cwd":"/w","strict":false}`},
			status: 409, code: server.CodeExists, field: "strict"},
		{name: "create again with another name", req: rawReq{method: "POST", path: "/v1/sessions", contentType: jsonType, body: `{"id":"s1","cwd":"/w","name":"other"}`},
			status: 409, code: server.CodeExists, field: "name"},
		{name: "entry conflict names the entry", req: rawReq{method: "POST", path: "/v1/sessions/s1/entries", contentType: jsonType, body: appendBody("u1", msg("u1", "", "user", "changed"))},
			status: 409, code: server.CodeEntryConflict,
			check: func(t *testing.T, _ http.Header, e errResp) { require.Equal(t, "u1", e.Error.EntryID) }},
		{name: "unknown parent names the entry and its parent", req: rawReq{method: "POST", path: "/v1/sessions/s1/entries", contentType: jsonType, body: appendBody("u1", msg("x1", "ghost", "user", "x"))},
			status: 422, code: server.CodeUnknownParent,
			check: func(t *testing.T, _ http.Header, e errResp) {
				require.Equal(t, "x1", e.Error.EntryID)
				require.Equal(t, "ghost", e.Error.RefersTo)
			}},
		{name: "invalid entry names its index", req: rawReq{method: "POST", path: "/v1/sessions/s1/entries", contentType: jsonType, body: appendBody("u1", msg("u2", "u1", "user", "x"), json.RawMessage(`{"id":"x"}`))},
			status: 400, code: server.CodeInvalidEntry,
			check: func(t *testing.T, _ http.Header, e errResp) { require.Equal(t, 1, *e.Error.Index) }},
		{name: "a numeric parentId is an invalid entry, not a storage error", req: rawReq{method: "POST", path: "/v1/sessions/s1/entries", contentType: jsonType,
			body: appendBody("u1", json.RawMessage(`{"type":"message","id":"n1","parentId":5}`))},
			status: 400, code: server.CodeInvalidEntry,
			check: func(t *testing.T, _ http.Header, e errResp) { require.Equal(t, 0, *e.Error.Index) }},
		{name: "an entry over the store's limit names its index", req: rawReq{method: "POST", path: "/v1/sessions/s1/entries", contentType: jsonType,
			body: appendBody("u1", msg("u2", "u1", "user", "x"), msg("big", "u2", "user", strings.Repeat("x", 600)))},
			status: 413, code: server.CodeTooLarge,
			check: func(t *testing.T, _ http.Header, e errResp) { require.Equal(t, 1, *e.Error.Index) }},
		{name: "an id the command line accepts", req: rawReq{method: "POST", path: "/v1/sessions", contentType: jsonType, body: `{"id":"café"}`}, status: 201},
		{name: "a session the command line wrote", req: rawReq{method: "GET", path: "/v1/sessions/" + "caf%C3%A9-cli"}, status: 200},
		{name: "an id no one accepts", req: rawReq{method: "POST", path: "/v1/sessions", contentType: jsonType, body: `{"id":"x.log"}`},
			status: 400, code: server.CodeInvalidRequest, field: "id"},
	}
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			b := be.new(t)
			ts := newServerWith(t, b, server.Config{}, repository.Config{MaxEntryBytes: 512})
			c := ts.as(t, "acme", "alice")
			code, body := c.do("POST", "/v1/sessions", map[string]any{"id": "s1", "cwd": "/w"})
			require.Equal(t, http.StatusCreated, code, string(body))
			code, body = c.do("POST", "/v1/sessions/s1/entries", appendReq("", msg("u1", "", "user", "hello")))
			require.Equal(t, http.StatusOK, code, string(body))
			writeLikeTheCLI(t, b, "acme~alice", "café-cli")
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					status, h, body := c.send(tc.req)
					require.Equal(t, tc.status, status, string(body))
					if tc.code == "" {
						return
					}
					e := requireEnvelope(t, status, h, body, tc.code)
					require.Equal(t, tc.field, e.Error.Field)
					if tc.check != nil {
						tc.check(t, h, e)
					}
				})
			}
			l := decode[struct{ Sessions []metadata }](t, must(c.do("GET", "/v1/sessions", nil)))
			var ids []string
			for _, m := range l.Sessions {
				ids = append(ids, m.ID)
			}
			require.Contains(t, ids, "café", "listed")
			require.Contains(t, ids, "café-cli", "a session the command line wrote is listed")
		})
	}
}

// writeLikeTheCLI stores session id of namespace ns (agent "default") as
// `transcript import` does: its header and an entry in one level-0 segment.
func writeLikeTheCLI(t *testing.T, b bucket.Bucket, ns, id string) {
	t.Helper()
	s, err := transcript.New(transcript.Config{Bucket: b})
	require.NoError(t, err)
	defer s.Close()
	header := fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":"2026-03-01T12:00:00.000Z","cwd":"/w"}`, id)
	ref := transcript.TranscriptRef{Namespace: ns, AgentID: "default", SessionID: id}
	_, err = s.AppendSegment(t.Context(), ref, [][]byte{[]byte(header), msg("m1", "", "user", "x")}, transcript.NewRandomWriter())
	require.NoError(t, err)
}

// TestEdge_StalledBody: a body that stops arriving answers 408 request_timeout
// once Config.BodyTimeout has passed, in the envelope, and the connection is
// closed.
func TestEdge_StalledBody(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			ts := newServer(t, be.new(t), server.Config{BodyTimeout: 300 * time.Millisecond})
			tok := tokenFor(t, "acme", "alice")
			// Before the request is sent: the server's BodyTimeout starts when it
			// handles the request, which can be before this goroutine runs again
			// after the write (on a loaded machine, by more than the margin below).
			start := time.Now()
			resp, body := sendRaw(t, ts.URL, fmt.Sprintf("POST /v1/sessions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"id\":", tok))
			require.Equal(t, http.StatusRequestTimeout, resp.StatusCode, string(body))
			require.GreaterOrEqual(t, time.Since(start), 250*time.Millisecond)
			requireEnvelope(t, resp.StatusCode, resp.Header, body, server.CodeRequestTimeout)
			require.True(t, resp.Close, "the connection is not reused")
		})
	}
}

// sendRaw writes request, as it is, on a new connection to the server at url
// and returns the response and its body, read within 30 s.
func sendRaw(t *testing.T, url, request string) (*http.Response, []byte) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, request)
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp, body
}

// TestEdge_DeclaredTooLarge: a body whose Content-Length is over the server's
// limit is answered 413 too_large at once, without waiting for a body the
// server would refuse anyway (it never arrives here: a client that announces
// a terabyte got 408 after the body timeout), and the connection is closed.
func TestEdge_DeclaredTooLarge(t *testing.T) {
	ts := newServer(t, backends[0].new(t), server.Config{MaxBodyBytes: 1 << 10, BodyTimeout: time.Minute})
	tok := tokenFor(t, "acme", "alice")
	for _, path := range []string{"/v1/sessions", "/v1/sessions/s/entries", "/v1/sessions/s/fork"} {
		t.Run(path, func(t *testing.T) {
			resp, body := sendRaw(t, ts.URL, fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000000000000\r\n\r\n{\"id\":", path, tok))
			require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, string(body))
			requireEnvelope(t, resp.StatusCode, resp.Header, body, server.CodeTooLarge)
			require.True(t, resp.Close, "the connection is not reused")
		})
	}
}

// TestEdge_BodiesInFlightBounded: the request bodies a server holds at once are
// bounded in all (Config.MaxBodyBytesInFlight), not only each by MaxBodyBytes:
// while one client's large body is arriving, another's that would take the
// server past the bound is answered 503 unavailable with Retry-After (what
// clients retry on), and once the first is done the same request succeeds.
// Without the bound every concurrent large append added its body, and more, to
// the server's memory.
func TestEdge_BodiesInFlightBounded(t *testing.T) {
	const max = 1 << 20
	ts := newServer(t, backends[0].new(t), server.Config{MaxBodyBytes: max, MaxBodyBytesInFlight: max + max/2, BodyTimeout: time.Minute})
	c := ts.as(t, "acme", "alice")
	must(c.do("POST", "/v1/sessions", map[string]any{"id": "s"}))
	body, err := json.Marshal(appendReq("", msg("u1", "", "user", strings.Repeat("x", max-300))))
	require.NoError(t, err)
	require.Less(t, len(body), max)

	// The first body arrives but its last byte: the server holds the rest.
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST /v1/sessions/s/entries HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		tokenFor(t, "acme", "alice"), len(body), body[:len(body)-1])
	require.NoError(t, err)
	require.Eventually(t, func() bool { return server.BodyBytesInFlight(ts.srv) == int64(len(body)) },
		10*time.Second, 5*time.Millisecond)

	status, h, resp := c.send(rawReq{method: "POST", path: "/v1/sessions/s/entries", contentType: "application/json", body: string(body)})
	require.Equal(t, http.StatusServiceUnavailable, status, string(resp))
	requireEnvelope(t, status, h, resp, server.CodeUnavailable)
	require.NotEmpty(t, h.Get("Retry-After"))

	_, err = conn.Write(body[len(body)-1:])
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(30*time.Second)))
	first, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	require.NoError(t, first.Body.Close())
	require.Equal(t, http.StatusOK, first.StatusCode)
	require.Zero(t, server.BodyBytesInFlight(ts.srv), "a request's body is given back when it ends")

	// The retry is a retry of a committed append: 200.
	status, _, resp = c.send(rawReq{method: "POST", path: "/v1/sessions/s/entries", contentType: "application/json", body: string(body)})
	require.Equal(t, http.StatusOK, status, string(resp))
	require.Zero(t, server.BodyBytesInFlight(ts.srv))
}

// TestEdge_BucketDown: with MinIO unreachable, requests answer 503 unavailable
// with Retry-After (what clients retry on), /readyz too; once it is back, 200.
func TestEdge_BucketDown(t *testing.T) {
	endpoint, access, secret := s3test.S3Endpoint(t)
	name := s3test.NewS3Bucket(t, "serve-down-").Name()
	p := newTCPProxy(t, endpoint)
	b, err := s3bucket.New(t.Context(), s3bucket.Config{Endpoint: p.addr(), Bucket: name, AccessKey: access, SecretKey: secret,
		Region: "us-east-1", Insecure: true, RequestTimeout: 2 * time.Second, MaxRetries: -1})
	require.NoError(t, err)
	ts := newServer(t, b, server.Config{})
	c := ts.as(t, "acme", "alice")
	code, body := c.do("POST", "/v1/sessions", map[string]any{"id": "s1"})
	require.Equal(t, http.StatusCreated, code, string(body))

	p.stop()
	for _, rq := range []rawReq{
		{method: "GET", path: "/v1/sessions"},
		{method: "GET", path: "/v1/sessions/s1"},
		{method: "POST", path: "/v1/sessions", contentType: "application/json", body: `{"id":"s2"}`},
		{method: "POST", path: "/v1/sessions/s1/entries", contentType: "application/json", body: `{"expectedHead":null,"entries":[{"type":"custom","id":"e1","parentId":null,"customType":"x"}]}`},
		{method: "GET", path: "/readyz", noAuth: true},
	} {
		status, h, body := c.send(rq)
		require.Equal(t, http.StatusServiceUnavailable, status, "%s %s: %s", rq.method, rq.path, body)
		require.Equal(t, "1", h.Get("Retry-After"), "%s %s", rq.method, rq.path)
		want := server.CodeUnavailable
		if rq.path == "/readyz" {
			want = server.CodeNotReady
		}
		requireEnvelope(t, status, h, body, want)
	}
	p.start()
	code, body = c.do("GET", "/v1/sessions/s1", nil)
	require.Equal(t, http.StatusOK, code, string(body))
}

// tcpProxy forwards connections to a target; stop refuses new ones and cuts the
// open ones, start listens again on the same address.
type tcpProxy struct {
	t      *testing.T
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
	listen string
	wg     sync.WaitGroup
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	p := &tcpProxy{t: t, target: target, listen: "127.0.0.1:0"}
	p.start()
	t.Cleanup(func() {
		p.stop()
		p.wg.Wait()
	})
	return p
}

func (p *tcpProxy) addr() string { return p.listen }

func (p *tcpProxy) start() {
	ln, err := net.Listen("tcp", p.listen)
	require.NoError(p.t, err)
	p.mu.Lock()
	p.ln, p.listen = ln, ln.Addr().String()
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", p.target)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			p.wg.Go(func() { _, _ = io.Copy(out, in); out.Close() })
			p.wg.Go(func() { _, _ = io.Copy(in, out); in.Close() })
		}
	})
}

func (p *tcpProxy) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// TestEdge_LogDurations: each request's log line carries its duration with its
// unit, duration_ms, a number of milliseconds.
func TestEdge_LogDurations(t *testing.T) {
	ts := newServer(t, backends[0].new(t), server.Config{})
	c := ts.as(t, "acme", "alice")
	must(c.do("GET", "/v1/sessions", nil))
	c.send(rawReq{method: "GET", path: "/nope"})
	lines := strings.Split(strings.TrimSpace(ts.log.String()), "\n")
	require.Len(t, lines, 2)
	for _, line := range lines {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		ms, ok := rec["duration_ms"].(float64)
		require.True(t, ok, "duration_ms is a number: %s", line)
		require.GreaterOrEqual(t, ms, 0.0)
		require.Less(t, ms, 60_000.0, "milliseconds, not nanoseconds")
		require.NotContains(t, rec, "duration", "no unitless duration: %s", line)
	}
}
