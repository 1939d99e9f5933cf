package benchkit_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/transcriptstore/transcript/internal/benchkit"
	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/server"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var testKey = []byte("benchkit-test-key-of-32-bytes!!!")

// chainEntry is entry i of a chain, as the server's benchmark writes them.
func chainEntry(i int) []byte {
	parent := "null"
	if i > 0 {
		parent = fmt.Sprintf(`"m%06d"`, i-1)
	}
	return fmt.Appendf(nil, `{"type":"message","id":"m%06d","parentId":%s,"timestamp":"2026-03-01T12:00:00.000Z","message":{"role":"user","content":"turn %d","timestamp":1}}`, i, parent, i)
}

// serve starts a server, pages of at most maxPage entries, over a repository of
// owner acme/alice holding session "s" of n entries, and returns its URL and a
// token of alice.
func serve(t *testing.T, n, maxPage int) (string, string) {
	t.Helper()
	ctx := t.Context()
	store, err := transcript.New(transcript.Config{Bucket: membucket.New()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, store.Close()) })
	repos, err := repository.NewService(store, repository.Config{})
	require.NoError(t, err)
	repo, err := repos.Repository(repository.Owner{Tenant: "acme", User: "alice"})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, repo.Close()) })
	sess, err := repo.Create(ctx, repository.CreateOptions{ID: "s", Cwd: "/w"})
	require.NoError(t, err)
	raws := make([][]byte, n)
	for i := range raws {
		raws[i] = chainEntry(i)
	}
	if n > 0 {
		require.NoError(t, sess.Append(ctx, raws...))
	}
	srv, err := server.New(server.Config{Repositories: repos, Auth: &server.JWTAuth{HMACKey: testKey}, MaxPage: maxPage})
	require.NoError(t, err)
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
	})
	token, err := server.MintToken(testKey, "acme", "alice", time.Now(), time.Hour)
	require.NoError(t, err)
	return hs.URL, token
}

// Both decoders read every entry of a session, over one page or several.
func TestReadPaged(t *testing.T) {
	decoders := map[string]benchkit.PageDecoder{"scan": benchkit.ScanPage, "json": benchkit.DecodePage}
	tests := []struct {
		name       string
		n, maxPage int
		requests   int // the open answers the first page; none after the page that reaches the entryCount
	}{
		{"empty", 0, 3, 1},
		{"one page", 3, 3, 1},
		{"pages", 10, 3, 4},
		{"default pages", 1001, 0, 1},
		{"default pages, many", 10001, 0, 2},
	}
	for _, tc := range tests {
		url, token := serve(t, tc.n, tc.maxPage)
		for name, decode := range decoders {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				rt := &countingTransport{next: http.DefaultTransport.(*http.Transport).Clone()}
				client := &http.Client{Transport: rt}
				defer rt.next.CloseIdleConnections()
				got, err := benchkit.ReadPaged(t.Context(), client, url, token, "s", decode)
				require.NoError(t, err)
				require.Equal(t, tc.n, got)
				require.Equal(t, tc.requests, rt.n, "the metadata with the first page, and the pages after it")
			})
		}
	}
}

// countingTransport counts the requests sent through it.
type countingTransport struct {
	next *http.Transport
	n    int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n++
	return c.next.RoundTrip(r)
}

// A failed request, a page that does not decode or does not advance, and pages
// that disagree with the metadata are errors, never a count.
func TestReadPagedErrors(t *testing.T) {
	url, token := serve(t, 2, 0)
	client := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	defer client.CloseIdleConnections()
	_, err := benchkit.ReadPaged(t.Context(), client, url, token, "missing", benchkit.ScanPage)
	var se *benchkit.StatusError
	require.ErrorAs(t, err, &se)
	require.Equal(t, http.StatusNotFound, se.Code)
	_, err = benchkit.ReadPaged(t.Context(), client, url, "not-a-token", "s", benchkit.ScanPage)
	require.ErrorAs(t, err, &se)
	require.Equal(t, http.StatusUnauthorized, se.Code)

	tests := []struct {
		name  string
		meta  string
		pages []string // answers to the pages after the open's
		want  error
	}{
		{"more in the metadata", `{"entryCount":3,"page":{"entries":[{},{}],"nextSeq":2,"entryCount":3}}`, []string{`{"entries":[],"nextSeq":2,"entryCount":2}`}, benchkit.ErrCountMismatch},
		{"fewer in the metadata", `{"entryCount":1,"page":{"entries":[{},{}],"nextSeq":2,"entryCount":2}}`, nil, benchkit.ErrCountMismatch},
		{"no advance", `{"entryCount":2,"page":{"entries":[{}],"nextSeq":0,"entryCount":2}}`, nil, nil},
		{"bad page", `{"entryCount":2,"page":{"entries":[{}],"nextSeq":1,"entryCount":2}}`, []string{`{"entries":[{},`}, nil},
		{"bad metadata", `{"entryCount":`, nil, nil},
		{"no page in the metadata", `{"entryCount":2}`, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mux := http.NewServeMux()
			mux.HandleFunc("GET /v1/sessions/s", func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Authorization") != "Bearer tok" {
					http.Error(w, "no token", http.StatusUnauthorized)
					return
				}
				fmt.Fprint(w, tc.meta)
			})
			calls := 0
			mux.HandleFunc("GET /v1/sessions/s/entries", func(w http.ResponseWriter, r *http.Request) {
				if calls >= len(tc.pages) {
					http.Error(w, "too many pages", http.StatusTeapot)
					return
				}
				calls++
				fmt.Fprint(w, tc.pages[calls-1])
			})
			hs := httptest.NewServer(mux)
			defer hs.Close()
			c := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
			defer c.CloseIdleConnections()
			_, err := benchkit.ReadPaged(context.Background(), c, hs.URL, "tok", "s", benchkit.DecodePage)
			require.Error(t, err)
			if tc.want != nil {
				require.ErrorIs(t, err, tc.want)
			}
			require.False(t, errors.As(err, new(*benchkit.StatusError)), "no page beyond the answers: %v", err)
		})
	}
}
