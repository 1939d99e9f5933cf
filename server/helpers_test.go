package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/s3test"
	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/server"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/filebucket"
)

// testKey is the HS256 key of the test servers.
var testKey = []byte("0123456789abcdef0123456789abcdef-test")

// backends are the buckets the server suite runs over: a directory and each S3
// engine.
var backends = []struct {
	name string
	new  func(t *testing.T) bucket.Bucket
}{
	{"file", func(t *testing.T) bucket.Bucket {
		b, err := filebucket.New(t.TempDir())
		require.NoError(t, err)
		return b
	}},
	{"minio", func(t *testing.T) bucket.Bucket { return s3test.NewS3Bucket(t, "serve-") }},
	{"seaweedfs", func(t *testing.T) bucket.Bucket { return s3test.SeaweedFS().NewBucket(t, "serve-") }},
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testServer is a server over one bucket, with its log.
type testServer struct {
	*httptest.Server
	srv *server.Server
	log *syncBuffer
}

// newServer starts a server on b with cfg (Repositories, Auth and Logger filled
// in when unset).
func newServer(t testing.TB, b bucket.Bucket, cfg server.Config) *testServer {
	return newServerWith(t, b, cfg, repository.Config{})
}

// newServerWith is newServer whose repositories are configured by rcfg.
func newServerWith(t testing.TB, b bucket.Bucket, cfg server.Config, rcfg repository.Config) *testServer {
	t.Helper()
	store, err := transcript.New(transcript.Config{Bucket: b})
	require.NoError(t, err)
	logs := &syncBuffer{}
	cfg.Repositories, err = repository.NewService(store, rcfg)
	require.NoError(t, err)
	if cfg.Auth == nil {
		cfg.Auth = &server.JWTAuth{HMACKey: testKey}
	}
	cfg.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	srv, err := server.New(cfg)
	require.NoError(t, err)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		srv.EndStreams() // a stream never goes idle: end it before the server closes
		hs.Close()
		srv.Close()
	})
	return &testServer{Server: hs, srv: srv, log: logs}
}

// tokenFor mints a test token for tenant and user.
func tokenFor(t testing.TB, tenant, user string) string {
	t.Helper()
	tok, err := server.MintToken(testKey, tenant, user, time.Now(), time.Hour)
	require.NoError(t, err)
	return tok
}

// client calls one server as one owner.
type client struct {
	t     testing.TB
	base  string
	token string
}

func (ts *testServer) as(t testing.TB, tenant, user string) *client {
	return &client{t: t, base: ts.URL, token: tokenFor(t, tenant, user)}
}

// do sends a request with a JSON body (nil for none) and returns status and body.
func (c *client) do(method, path string, body any) (int, []byte) {
	c.t.Helper()
	var r io.Reader
	if body != nil {
		switch b := body.(type) {
		case string:
			r = bytes.NewReader([]byte(b))
		default:
			data, err := json.Marshal(body)
			require.NoError(c.t, err)
			r = bytes.NewReader(data)
		}
	}
	req, err := http.NewRequestWithContext(c.t.Context(), method, c.base+path, r)
	require.NoError(c.t, err)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(c.t, err)
	return resp.StatusCode, data
}

// metadata is the decoded session metadata of a response.
type metadata struct {
	ID            string  `json:"id"`
	CreatedAt     string  `json:"createdAt"`
	Name          string  `json:"name"`
	Cwd           string  `json:"cwd"`
	ParentSession string  `json:"parentSession"`
	Head          *string `json:"head"`
	EntryCount    int     `json:"entryCount"`
	Strict        bool    `json:"strict"`
}

// errResp is the error envelope of a response.
type errResp = server.ErrorBody

type page struct {
	Entries    []json.RawMessage `json:"entries"`
	NextSeq    int               `json:"nextSeq"`
	EntryCount int               `json:"entryCount"`
	Head       *string           `json:"head"`
}

func decode[T any](t testing.TB, data []byte) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(data, &v), string(data))
	return v
}

// msg returns a Pi message entry with text as its content.
func msg(id, parent, role, text string) json.RawMessage {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	return json.RawMessage(fmt.Sprintf(
		`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-03-01T12:00:00.000Z","message":{"role":%q,"content":%q,"timestamp":1}}`,
		id, p, role, text))
}

// appendReq is an append body.
func appendReq(expected string, entries ...json.RawMessage) map[string]any {
	var h any
	if expected != "" {
		h = expected
	}
	return map[string]any{"expectedHead": h, "entries": entries}
}

func str(s string) *string { return &s }
