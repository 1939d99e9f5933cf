package server_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/server"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestEndpoints walks every endpoint and its errors, in order, on each backend.
func TestEndpoints(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			ts := newServer(t, be.new(t), server.Config{MaxPage: 2})
			c := ts.as(t, "acme", "alice")
			var forkID string
			steps := []struct {
				name   string
				method string
				path   string
				body   any
				code   int
				check  func(t *testing.T, body []byte)
			}{
				{"create", "POST", "/v1/sessions", map[string]any{"id": "s1", "name": "first", "cwd": "/w"}, http.StatusCreated, func(t *testing.T, b []byte) {
					m := decode[metadata](t, b)
					require.Equal(t, "s1", m.ID)
					require.Equal(t, "first", m.Name)
					require.Equal(t, "/w", m.Cwd)
					require.True(t, m.Strict)
					require.NotEmpty(t, m.CreatedAt)
					require.Equal(t, 1, m.EntryCount) // the session_info entry
				}},
				{"create retry answers the session", "POST", "/v1/sessions", map[string]any{"id": "s1", "name": "first", "cwd": "/w"}, http.StatusOK, func(t *testing.T, b []byte) {
					require.Equal(t, "s1", decode[metadata](t, b).ID)
				}},
				{"create with generated id", "POST", "/v1/sessions", nil, http.StatusCreated, func(t *testing.T, b []byte) {
					require.Len(t, decode[metadata](t, b).ID, 36)
				}},
				{"create bad id", "POST", "/v1/sessions", map[string]any{"id": "../x"}, http.StatusBadRequest, nil},
				{"create malformed", "POST", "/v1/sessions", "{", http.StatusBadRequest, nil},
				{"open", "GET", "/v1/sessions/s1", nil, http.StatusOK, func(t *testing.T, b []byte) {
					m := decode[metadata](t, b)
					require.NotNil(t, m.Head) // the session_info entry
				}},
				{"open missing", "GET", "/v1/sessions/nope", nil, http.StatusNotFound, nil},
				{"list", "GET", "/v1/sessions", nil, http.StatusOK, func(t *testing.T, b []byte) {
					l := decode[struct{ Sessions []metadata }](t, b)
					require.Len(t, l.Sessions, 2)
				}},
			}
			for _, st := range steps {
				code, body := c.do(st.method, st.path, st.body)
				require.Equal(t, st.code, code, "%s: %s", st.name, body)
				if st.check != nil {
					st.check(t, body)
				}
			}

			// Appends at the head.
			head := decode[metadata](t, must(c.do("GET", "/v1/sessions/s1", nil))).Head
			require.NotNil(t, head)
			appends := []struct {
				name   string
				body   any
				code   int
				reason string
				head   string
			}{
				{"first", appendReq(*head, msg("u1", *head, "user", "hello")), http.StatusOK, "", "u1"},
				{"retry of a committed append", appendReq(*head, msg("u1", *head, "user", "hello")), http.StatusOK, "", "u1"},
				{"batch", appendReq("u1", msg("a1", "u1", "assistant", "hi"), msg("u2", "a1", "user", "more")), http.StatusOK, "", "u2"},
				{"stale head", appendReq("u1", msg("x1", "u1", "user", "late")), http.StatusConflict, "stale_head", "u2"},
				{"null head on a session with entries", appendReq("", msg("x2", "", "user", "late")), http.StatusConflict, "stale_head", "u2"},
				{"same id other bytes", appendReq("u2", msg("u1", *head, "user", "changed")), http.StatusConflict, "entry_conflict", ""},
				{"unknown parent", appendReq("u2", msg("x3", "ghost", "user", "orphan")), http.StatusUnprocessableEntity, "unknown_parent", ""},
				{"not an entry", appendReq("u2", json.RawMessage(`{"id":"x4"}`)), http.StatusBadRequest, "invalid_entry", ""},
				{"no entries", map[string]any{"expectedHead": "u2", "entries": []any{}}, http.StatusBadRequest, "invalid_request", ""},
				{"missing session", appendReq("", msg("x5", "", "user", "x")), http.StatusNotFound, "not_found", ""},
				{"leaf entry moves the head", appendReq("u2", json.RawMessage(`{"type":"leaf","id":"l1","parentId":"u2","timestamp":"2026-03-01T12:00:01.000Z","targetId":"u1"}`)), http.StatusOK, "", "u1"},
			}
			for _, a := range appends {
				path := "/v1/sessions/s1/entries"
				if a.name == "missing session" {
					path = "/v1/sessions/nope/entries"
				}
				code, body := c.do("POST", path, a.body)
				require.Equal(t, a.code, code, "%s: %s", a.name, body)
				if a.reason != "" {
					e := decode[errResp](t, body)
					require.Equal(t, a.reason, string(e.Error.Code), a.name)
					if a.head != "" {
						require.Equal(t, str(a.head), e.Error.Head, a.name)
					}
					continue
				}
				require.Equal(t, str(a.head), decode[server.AppendResponse](t, body).Head, a.name)
			}

			// Reads page through the entries in order; the retry wrote nothing.
			var ids []string
			for after := 0; ; {
				p := decode[page](t, must(c.do("GET", "/v1/sessions/s1/entries?after="+itoa(after), nil)))
				require.LessOrEqual(t, len(p.Entries), 2)
				require.Equal(t, str("u1"), p.Head)
				for _, e := range p.Entries {
					ids = append(ids, decode[struct{ ID string }](t, e).ID)
				}
				if len(p.Entries) == 0 {
					require.Equal(t, 5, p.EntryCount)
					break
				}
				after = p.NextSeq
			}
			require.Equal(t, []string{*head, "u1", "a1", "u2", "l1"}, ids)
			p := decode[page](t, must(c.do("GET", "/v1/sessions/s1/entries?after=1&limit=1", nil)))
			require.Len(t, p.Entries, 1)
			require.Equal(t, 2, p.NextSeq)
			for _, q := range []string{"after=-1", "limit=0", "limit=x"} {
				code, _ := c.do("GET", "/v1/sessions/s1/entries?"+q, nil)
				require.Equal(t, http.StatusBadRequest, code, q)
			}

			// Fork at a1: the path root..a1, parentSession s1.
			code, body := c.do("POST", "/v1/sessions/s1/fork", map[string]any{"entryId": "a1"})
			require.Equal(t, http.StatusCreated, code, string(body))
			fm := decode[metadata](t, body)
			require.Equal(t, "s1", fm.ParentSession)
			require.Equal(t, str("a1"), fm.Head)
			require.Equal(t, 3, fm.EntryCount)
			forkID = fm.ID
			code, body = c.do("POST", "/v1/sessions/s1/fork", map[string]any{"entryId": "ghost"})
			require.Equal(t, http.StatusUnprocessableEntity, code, string(body))
			require.Equal(t, server.CodeInvalidForkTarget, decode[errResp](t, body).Error.Code)
			code, body = c.do("POST", "/v1/sessions/s1/fork", map[string]any{"entryId": 5})
			require.Equal(t, http.StatusBadRequest, code, string(body))
			require.Equal(t, "entryId", decode[errResp](t, body).Error.Field)
			// Without entryId the fork holds every entry; with null none, and
			// either takes the id asked for (once).
			whole := decode[metadata](t, must(c.do("POST", "/v1/sessions/s1/fork", map[string]any{"id": "whole"})))
			require.Equal(t, metadata{ID: "whole", CreatedAt: whole.CreatedAt, Cwd: "/w", ParentSession: "s1", Head: str("u1"),
				EntryCount: 5, Strict: true, Name: "first"}, whole)
			empty := decode[metadata](t, must(c.do("POST", "/v1/sessions/s1/fork", map[string]any{"id": "empty", "entryId": nil})))
			require.Equal(t, "s1", empty.ParentSession)
			require.Zero(t, empty.EntryCount)
			require.Nil(t, empty.Head)
			code, body = c.do("POST", "/v1/sessions/s1/fork", map[string]any{"id": "empty", "entryId": "a1"})
			require.Equal(t, http.StatusConflict, code, string(body))
			require.Equal(t, server.CodeExists, decode[errResp](t, body).Error.Code)
			require.Equal(t, "id", decode[errResp](t, body).Error.Field)
			code, _ = c.do("POST", "/v1/sessions/nope/fork", map[string]any{"entryId": "a1"})
			require.Equal(t, http.StatusNotFound, code)

			// Delete: then the session is gone like one that never existed.
			code, _ = c.do("DELETE", "/v1/sessions/s1", nil)
			require.Equal(t, http.StatusNoContent, code)
			for _, r := range []struct{ method, path string }{
				{"GET", "/v1/sessions/s1"}, {"GET", "/v1/sessions/s1/entries"}, {"DELETE", "/v1/sessions/s1"},
			} {
				code, body := c.do(r.method, r.path, nil)
				require.Equal(t, http.StatusNotFound, code, r)
				require.Equal(t, server.CodeNotFound, decode[errResp](t, body).Error.Code)
			}
			code, _ = c.do("GET", "/v1/sessions/"+forkID, nil)
			require.Equal(t, http.StatusOK, code, "the fork outlives its source")

			// The log names routes and owners, never tokens or entry contents.
			logs := ts.log.String()
			require.Contains(t, logs, `"route":"POST /v1/sessions/{id}/entries"`)
			require.NotContains(t, logs, c.token)
			for _, secret := range []string{"hello", "changed", "orphan"} {
				require.NotContains(t, logs, secret)
			}
		})
	}
}

func must(code int, body []byte) []byte {
	if code >= 300 {
		panic("status " + itoa(code) + ": " + string(body))
	}
	return body
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestOwners checks that another owner's session answers exactly like one that
// never existed, on every route, and is not listed.
func TestOwners(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			ts := newServer(t, be.new(t), server.Config{})
			alice, bob := ts.as(t, "acme", "alice"), ts.as(t, "acme", "bob")
			other := ts.as(t, "other", "alice") // same user, other tenant
			code, _ := alice.do("POST", "/v1/sessions", map[string]any{"id": "mine"})
			require.Equal(t, http.StatusCreated, code)
			must(alice.do("POST", "/v1/sessions/mine/entries", appendReq("", msg("m1", "", "user", "x"))))
			routes := []struct {
				method, path string
				body         any
			}{
				{"GET", "/v1/sessions/%s", nil},
				{"GET", "/v1/sessions/%s/entries", nil},
				{"POST", "/v1/sessions/%s/entries", appendReq("m1", msg("b1", "m1", "user", "y"))},
				{"POST", "/v1/sessions/%s/fork", map[string]any{"entryId": "m1"}},
				{"DELETE", "/v1/sessions/%s", nil},
			}
			for _, c := range []*client{bob, other} {
				for _, r := range routes {
					code, body := c.do(r.method, strings.Replace(r.path, "%s", "mine", 1), r.body)
					_, never := c.do(r.method, strings.Replace(r.path, "%s", "never", 1), r.body)
					require.Equal(t, http.StatusNotFound, code, r)
					require.JSONEq(t, string(never), string(body), "another owner's session and a missing one answer alike")
				}
				l := decode[struct{ Sessions []metadata }](t, must(c.do("GET", "/v1/sessions", nil)))
				require.Empty(t, l.Sessions)
			}
			m := decode[metadata](t, must(alice.do("GET", "/v1/sessions/mine", nil)))
			require.Equal(t, 1, m.EntryCount, "nothing of the others' calls reached the session")
		})
	}
}

// TestAuth checks the credentials: missing, malformed, forged, expired, other
// algorithms and invalid owners are 401; RS256, EdDSA and trusted headers work
// when configured.
func TestAuth(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	edPub, edPriv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	now := time.Now()
	claims := func(mut func(jwt.MapClaims)) jwt.MapClaims {
		c := jwt.MapClaims{"tenant": "acme", "sub": "alice", "exp": now.Add(time.Hour).Unix()}
		if mut != nil {
			mut(c)
		}
		return c
	}
	sign := func(m jwt.SigningMethod, key any, c jwt.MapClaims) string {
		s, err := jwt.NewWithClaims(m, c).SignedString(key)
		require.NoError(t, err)
		return s
	}
	none, err := jwt.NewWithClaims(jwt.SigningMethodNone, claims(nil)).SignedString(jwt.UnsafeAllowNoneSignatureType)
	require.NoError(t, err)
	critical := jwt.NewWithClaims(jwt.SigningMethodHS256, claims(nil))
	critical.Header["crit"] = []string{"exp-ext"}
	crit, err := critical.SignedString(testKey)
	require.NoError(t, err)
	b := membucket.New()
	jwtAuth := &server.JWTAuth{HMACKey: testKey, PublicKey: rsaKey.Public()}
	edAuth := &server.JWTAuth{PublicKey: edPub}
	cases := []struct {
		name   string
		auth   server.Authenticator
		header map[string]string
		code   int
	}{
		{"valid HS256", jwtAuth, map[string]string{"Authorization": "Bearer " + sign(jwt.SigningMethodHS256, testKey, claims(nil))}, http.StatusOK},
		{"valid RS256", jwtAuth, map[string]string{"Authorization": "Bearer " + sign(jwt.SigningMethodRS256, rsaKey, claims(nil))}, http.StatusOK},
		{"valid EdDSA", edAuth, map[string]string{"Authorization": "Bearer " + sign(jwt.SigningMethodEdDSA, edPriv, claims(nil))}, http.StatusOK},
		{"missing", jwtAuth, nil, http.StatusUnauthorized},
		{"not bearer", jwtAuth, map[string]string{"Authorization": "Basic YTpi"}, http.StatusUnauthorized},
		{"garbage", jwtAuth, map[string]string{"Authorization": "Bearer not.a.jwt"}, http.StatusUnauthorized},
		{"forged", jwtAuth, map[string]string{"Authorization": "Bearer " + sign(jwt.SigningMethodHS256, []byte("another-key-another-key-another-key!"), claims(nil))}, http.StatusUnauthorized},
		{"expired", jwtAuth, map[string]string{"Authorization": "Bearer " + sign(jwt.SigningMethodHS256, testKey, claims(func(c jwt.MapClaims) { c["exp"] = now.Add(-time.Hour).Unix() }))}, http.StatusUnauthorized},
		{"no expiry", jwtAuth, map[string]string{"Authorization": "Bearer " + sign(jwt.SigningMethodHS256, testKey, claims(func(c jwt.MapClaims) { delete(c, "exp") }))}, http.StatusUnauthorized},
		{"alg none", jwtAuth, map[string]string{"Authorization": "Bearer " + none}, http.StatusUnauthorized},
		{"critical extension", jwtAuth, map[string]string{"Authorization": "Bearer " + crit}, http.StatusUnauthorized},
		{"HS256 unconfigured", edAuth, map[string]string{"Authorization": "Bearer " + sign(jwt.SigningMethodHS256, testKey, claims(nil))}, http.StatusUnauthorized},
		{"no tenant", jwtAuth, map[string]string{"Authorization": "Bearer " + sign(jwt.SigningMethodHS256, testKey, claims(func(c jwt.MapClaims) { delete(c, "tenant") }))}, http.StatusUnauthorized},
		{"tenant not a string", jwtAuth, map[string]string{"Authorization": "Bearer " + sign(jwt.SigningMethodHS256, testKey, claims(func(c jwt.MapClaims) { c["tenant"] = 7 }))}, http.StatusUnauthorized},
		{"headers when trusted", server.HeaderAuth{}, map[string]string{"X-Transcript-Tenant": "acme", "X-Transcript-User": "alice"}, http.StatusOK},
		{"headers missing user", server.HeaderAuth{}, map[string]string{"X-Transcript-Tenant": "acme"}, http.StatusUnauthorized},
		{"headers when not trusted", jwtAuth, map[string]string{"X-Transcript-Tenant": "acme", "X-Transcript-User": "alice"}, http.StatusUnauthorized},
		// A client's own header first, then the proxy's, added rather than set.
		{"user header twice", server.HeaderAuth{}, map[string]string{"X-Transcript-Tenant": "acme", "X-Transcript-User": "mallory", "+X-Transcript-User": "alice"}, http.StatusUnauthorized},
		{"tenant header twice", server.HeaderAuth{}, map[string]string{"X-Transcript-Tenant": "evil", "+X-Transcript-Tenant": "acme", "X-Transcript-User": "alice"}, http.StatusUnauthorized},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := newServer(t, b, server.Config{Auth: tc.auth, Registry: nil})
			req, err := http.NewRequestWithContext(t.Context(), "GET", ts.URL+"/v1/sessions", nil)
			require.NoError(t, err)
			for k, v := range tc.header {
				if !strings.HasPrefix(k, "+") {
					req.Header.Set(k, v)
				}
			}
			for k, v := range tc.header { // "+Name": added after the value set
				if k, added := strings.CutPrefix(k, "+"); added {
					req.Header.Add(k, v)
				}
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			require.Equal(t, tc.code, resp.StatusCode)
			if tc.code == http.StatusUnauthorized {
				require.NotEmpty(t, resp.Header.Get("WWW-Authenticate"))
			}
		})
	}
	require.Error(t, (&server.JWTAuth{}).Validate())
	require.Error(t, (&server.JWTAuth{HMACKey: []byte("short")}).Validate())
	require.NoError(t, jwtAuth.Validate())
	_, err = server.MintToken([]byte("short"), "a", "b", now, time.Hour)
	require.Error(t, err)
}

// TestLimits checks that oversized bodies and entries are refused with 413.
func TestLimits(t *testing.T) {
	ts := newServerWith(t, membucket.New(), server.Config{MaxBodyBytes: 4096}, repository.Config{MaxEntryBytes: 512})
	c := ts.as(t, "acme", "alice")
	must(c.do("POST", "/v1/sessions", map[string]any{"id": "s"}))
	cases := []struct {
		name string
		body any
		code int
	}{
		{"entry over the entry limit", appendReq("", msg("e1", "", "user", strings.Repeat("x", 600))), http.StatusRequestEntityTooLarge},
		{"body over the body limit", appendReq("", msg("e1", "", "user", strings.Repeat("x", 400)), msg("e2", "e1", "user", strings.Repeat("x", 400)),
			msg("e3", "e2", "user", strings.Repeat("x", 400)), msg("e4", "e3", "user", strings.Repeat("x", 400)),
			msg("e5", "e4", "user", strings.Repeat("x", 400)), msg("e6", "e5", "user", strings.Repeat("x", 400)),
			msg("e7", "e6", "user", strings.Repeat("x", 400)), msg("e8", "e7", "user", strings.Repeat("x", 400)),
			msg("e9", "e8", "user", strings.Repeat("x", 400)), msg("e10", "e9", "user", strings.Repeat("x", 400))), http.StatusRequestEntityTooLarge},
		{"within limits", appendReq("", msg("e1", "", "user", "small")), http.StatusOK},
	}
	for _, tc := range cases {
		code, body := c.do("POST", "/v1/sessions/s/entries", tc.body)
		require.Equal(t, tc.code, code, "%s: %s", tc.name, body)
	}
}

// TestRaceTwoServers runs 8 clients appending at one expected head through two
// servers (each with its own store over the same bucket): exactly one wins, the
// others get 409 stale_head naming the winner's entry, and the session holds the
// winner's entry only.
func TestRaceTwoServers(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			b := be.new(t)
			servers := []*testServer{newServer(t, b, server.Config{}), newServer(t, b, server.Config{})}
			c0 := servers[0].as(t, "acme", "alice")
			must(c0.do("POST", "/v1/sessions", map[string]any{"id": "race"}))
			must(c0.do("POST", "/v1/sessions/race/entries", appendReq("", msg("root", "", "user", "start"))))
			const clients = 8
			codes := make([]int, clients)
			heads := make([]*string, clients)
			var wg sync.WaitGroup
			for i := range clients {
				wg.Go(func() {
					c := servers[i%2].as(t, "acme", "alice")
					id := "c" + itoa(i)
					code, body := c.do("POST", "/v1/sessions/race/entries", appendReq("root", msg(id, "root", "user", id)))
					codes[i] = code
					if code == http.StatusConflict {
						heads[i] = decode[errResp](t, body).Error.Head
					}
				})
			}
			wg.Wait()
			winner := -1
			for i, code := range codes {
				if code == http.StatusOK {
					require.Equal(t, -1, winner, "two winners: %v", codes)
					winner = i
					continue
				}
				require.Equal(t, http.StatusConflict, code, "codes %v", codes)
			}
			require.NotEqual(t, -1, winner, "no winner: %v", codes)
			wid := "c" + itoa(winner)
			for i, h := range heads {
				if i != winner {
					require.Equal(t, str(wid), h)
				}
			}
			for _, ts := range servers {
				p := decode[page](t, must(ts.as(t, "acme", "alice").do("GET", "/v1/sessions/race/entries", nil)))
				require.Equal(t, 2, p.EntryCount)
				require.Equal(t, str(wid), p.Head)
			}
			metrics := string(must(c0.do("GET", "/metrics", nil))) + string(must(servers[1].as(t, "a", "b").do("GET", "/metrics", nil)))
			require.Contains(t, metrics, `transcript_serve_append_conflicts_total{reason="stale_head"}`)
		})
	}
}

// TestLostResponseRetry replays an append whose response was lost, after another
// append committed on top of it: the retry succeeds and writes nothing.
func TestLostResponseRetry(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			ts := newServer(t, be.new(t), server.Config{})
			c := ts.as(t, "acme", "alice")
			must(c.do("POST", "/v1/sessions", map[string]any{"id": "s"}))
			req := appendReq("", msg("u1", "", "user", "hello"), msg("a1", "u1", "assistant", "hi"))
			must(c.do("POST", "/v1/sessions/s/entries", req)) // response "lost"
			must(c.do("POST", "/v1/sessions/s/entries", appendReq("a1", msg("u2", "a1", "user", "next"))))
			code, body := c.do("POST", "/v1/sessions/s/entries", req)
			require.Equal(t, http.StatusOK, code, string(body))
			p := decode[page](t, must(c.do("GET", "/v1/sessions/s/entries", nil)))
			require.Equal(t, 3, p.EntryCount, "no duplicate")
			require.Equal(t, str("u2"), p.Head)
		})
	}
}

// failingBucket is a bucket whose listings fail, for readiness.
type failingBucket struct{ bucket.Bucket }

func (failingBucket) List(context.Context, bucket.ListOptions, func(bucket.ObjectInfo) error) error {
	return errors.New("unreachable")
}

// TestHealth checks /healthz, /readyz and /metrics.
func TestHealth(t *testing.T) {
	ts := newServer(t, membucket.New(), server.Config{})
	c := &client{t: t, base: ts.URL}
	code, _ := c.do("GET", "/healthz", nil)
	require.Equal(t, http.StatusOK, code)
	code, _ = c.do("GET", "/readyz", nil)
	require.Equal(t, http.StatusOK, code)
	code, body := c.do("GET", "/metrics", nil)
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, string(body), `transcript_serve_requests_total{code="200",route="GET /readyz"} 1`)
	require.Contains(t, string(body), `transcript_serve_request_duration_seconds_bucket{route="GET /healthz"`)

	down := newServer(t, failingBucket{membucket.New()}, server.Config{})
	code, body = (&client{t: t, base: down.URL}).do("GET", "/readyz", nil)
	require.Equal(t, http.StatusServiceUnavailable, code, string(body))
	code, _ = (&client{t: t, base: down.URL}).do("GET", "/healthz", nil)
	require.Equal(t, http.StatusOK, code)
}
