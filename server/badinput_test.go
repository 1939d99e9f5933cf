package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/segment"
	"github.com/transcriptstore/transcript/server"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// oneEntrySession serves session "s" of one entry, "u1", with entries limited
// to 512 bytes, and returns its owner's client.
func oneEntrySession(t *testing.T) *client {
	ts := newServerWith(t, backends[0].new(t), server.Config{}, repository.Config{MaxEntryBytes: 512})
	c := ts.as(t, "acme", "alice")
	must(c.do("POST", "/v1/sessions", map[string]any{"id": "s"}))
	must(c.do("POST", "/v1/sessions/s/entries", appendReq("", msg("u1", "", "user", "first"))))
	return c
}

// TestBadEntriesAreTheClientsError: every entry the repository refuses is the
// client's error, a 4xx whose code openapi.yaml lists and that names the entry's
// index, never a 500; nothing of the refused append is stored.
func TestBadEntriesAreTheClientsError(t *testing.T) {
	good := msg("u2", "u1", "user", "ok")
	cases := []struct {
		name   string
		entry  string
		status int
		code   server.ErrorCode
	}{
		{"a numeric parentId", `{"type":"message","id":"n1","parentId":42,"timestamp":"2026-03-01T12:00:00.000Z"}`, 400, server.CodeInvalidEntry},
		{"a parentId that is an object", `{"type":"message","id":"n1","parentId":{"id":"u1"}}`, 400, server.CodeInvalidEntry},
		{"a number, not an object", `42`, 400, server.CodeInvalidEntry},
		{"a string, not an object", `"hello"`, 400, server.CodeInvalidEntry},
		{"an array, not an object", `[{"type":"message","id":"n1"}]`, 400, server.CodeInvalidEntry},
		{"null", `null`, 400, server.CodeInvalidEntry},
		{"no type", `{"id":"n1","parentId":"u1"}`, 400, server.CodeInvalidEntry},
		{"a type that is not a string", `{"type":7,"id":"n1","parentId":"u1"}`, 400, server.CodeInvalidEntry},
		{"no id", `{"type":"message","parentId":"u1"}`, 400, server.CodeInvalidEntry},
		{"an empty id", `{"type":"message","id":"","parentId":"u1"}`, 400, server.CodeInvalidEntry},
		{"a numeric id", `{"type":"message","id":7,"parentId":"u1"}`, 400, server.CodeInvalidEntry},
		{"a session header", `{"type":"session","version":3,"id":"h2","timestamp":"2026-03-01T12:00:00.000Z","cwd":"/"}`, 400, server.CodeInvalidEntry},
		{"over the entry limit", string(msg("big", "u1", "user", strings.Repeat("x", 600))), 413, server.CodeTooLarge},
		{"an unknown parent", string(msg("n1", "ghost", "user", "x")), 422, server.CodeUnknownParent},
	}
	c := oneEntrySession(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body, err := json.Marshal(appendReq("u1", good, json.RawMessage(tc.entry)))
			require.NoError(t, err)
			status, h, resp := c.send(rawReq{method: "POST", path: "/v1/sessions/s/entries", contentType: "application/json", body: string(body)})
			require.Equal(t, tc.status, status, string(resp))
			e := requireEnvelope(t, status, h, resp, tc.code)
			if tc.code != server.CodeUnknownParent {
				require.NotNil(t, e.Error.Index, string(resp))
				require.Equal(t, 1, *e.Error.Index)
			}
			p := decode[page](t, must(c.do("GET", "/v1/sessions/s/entries", nil)))
			require.Equal(t, 1, p.EntryCount, "nothing of a refused append is stored")
		})
	}
	// What is not an array of entries is a malformed request.
	for _, body := range []string{`{"expectedHead":"u1","entries":{"type":"message"}}`, `{"expectedHead":"u1","entries":"x"}`} {
		status, h, resp := c.send(rawReq{method: "POST", path: "/v1/sessions/s/entries", contentType: "application/json", body: body})
		require.Equal(t, http.StatusBadRequest, status, string(resp))
		require.Equal(t, "entries", requireEnvelope(t, status, h, resp, server.CodeInvalidRequest).Error.Field)
	}
}

// TestMalformedEntriesAreMalformedBodies: an append whose entries are not all
// JSON is a malformed body, answered as the request decoder answers it (400
// invalid_request, the byte at which the JSON breaks), whatever else is wrong
// with it: a stale head, a missing session, an entry over the limit before it.
// The server leaves the entries' check to the repository (appendbody.go), so
// these answers are what that must not change. Nothing is stored.
func TestMalformedEntriesAreMalformedBodies(t *testing.T) {
	good := string(msg("u2", "u1", "user", "ok"))
	big := string(msg("big", "u1", "user", strings.Repeat("x", 600)))
	cases := []struct {
		name, session, head string
		entries             []string
	}{
		{"a literal cut short", "s", "u1", []string{good, `{"type":"message","id":"n1","parentId":"u1","x":tru}`}},
		{"a trailing comma", "s", "u1", []string{`{"type":"message","id":"n1","parentId":"u1",}`, good}},
		{"not a value", "s", "u1", []string{good, `nul`}},
		{"a stale head", "s", "nope", []string{good, `{"id":tru}`}},
		{"a missing session", "missing", "u1", []string{good, `{"id":tru}`}},
		{"an entry over the limit first", "s", "u1", []string{big, `{"id":tru}`}},
		{"spaces to compact", "s", "u1", []string{good, `{"id" : 1 2}`}},
	}
	c := oneEntrySession(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := fmt.Sprintf(`{"expectedHead":%q,"entries":[%s]}`, tc.head, strings.Join(tc.entries, ","))
			var syntax *json.SyntaxError
			require.ErrorAs(t, json.NewDecoder(strings.NewReader(body)).Decode(&server.AppendRequest{}), &syntax)
			status, h, resp := c.send(rawReq{method: "POST", path: "/v1/sessions/" + tc.session + "/entries", contentType: "application/json", body: body})
			require.Equal(t, http.StatusBadRequest, status, string(resp))
			e := requireEnvelope(t, status, h, resp, server.CodeInvalidRequest)
			require.Equal(t, fmt.Sprintf("malformed JSON body at byte %d: %v", syntax.Offset, syntax), e.Error.Message)
			require.Nil(t, e.Error.Index, string(resp))
			p := decode[page](t, must(c.do("GET", "/v1/sessions/s/entries", nil)))
			require.Equal(t, 1, p.EntryCount, "nothing of a refused append is stored")
		})
	}
	// The session still takes appends.
	must(c.do("POST", "/v1/sessions/s/entries", appendReq("u1", json.RawMessage(good))))
	p := decode[page](t, must(c.do("GET", "/v1/sessions/s/entries", nil)))
	require.Equal(t, 2, p.EntryCount)
}

// TestBodiesAreUTF8AndNotEncoded: a body that is not UTF-8 is refused (400)
// before anything reads it, an entry's bytes as a session id's: JSON text is
// UTF-8, encoding/json would create the session under another id (invalid bytes
// replaced by U+FFFD), and an entry stored with them would make every answer
// holding it invalid JSON. A body with a Content-Encoding is refused (415), not
// read as malformed JSON. Nothing is stored.
func TestBodiesAreUTF8AndNotEncoded(t *testing.T) {
	c := oneEntrySession(t)
	cases := []struct {
		name, path, encoding, body string
		status                     int
		code                       server.ErrorCode
	}{
		{"an id with an invalid byte", "/v1/sessions", "", "{\"id\":\"x\xc3(\"}", 400, server.CodeInvalidRequest},
		{"an entry with an invalid byte", "/v1/sessions/s/entries", "",
			`{"expectedHead":"u1","entries":[{"type":"message","id":"n1","parentId":"u1","message":{"role":"user","content":"` + "\xff\xfe" + `"}}]}`,
			400, server.CodeInvalidRequest},
		{"a surrogate encoded in UTF-8", "/v1/sessions/s/entries", "",
			`{"expectedHead":"u1","entries":[{"type":"message","id":"n1","parentId":"u1","x":"` + "\xed\xa0\x80" + `"}]}`,
			400, server.CodeInvalidRequest},
		{"a gzip body", "/v1/sessions/s/entries", "gzip", "\x1f\x8b\x08\x00", 415, server.CodeUnsupportedMediaType},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, h, resp := c.send(rawReq{method: "POST", path: tc.path, contentType: "application/json", encoding: tc.encoding, body: tc.body})
			require.Equal(t, tc.status, status, string(resp))
			requireEnvelope(t, status, h, resp, tc.code)
			p := decode[page](t, must(c.do("GET", "/v1/sessions/s/entries", nil)))
			require.Equal(t, 1, p.EntryCount, "nothing is stored")
			l := decode[server.ListResponse](t, must(c.do("GET", "/v1/sessions", nil)))
			require.Len(t, l.Sessions, 1, "no session is created")
		})
	}
	// The same entry in valid UTF-8 is taken, and with "Content-Encoding: identity".
	status, _, resp := c.send(rawReq{method: "POST", path: "/v1/sessions/s/entries", contentType: "application/json", encoding: "identity",
		body: `{"expectedHead":"u1","entries":[{"type":"message","id":"n1","parentId":"u1","message":{"role":"user","content":"é"}}]}`})
	require.Equal(t, http.StatusOK, status, string(resp))
}

// TestDamagedHead: a strict session whose head object does not parse answers
// 500 invalid_session saying so (not that its head does not match its
// entries), and the owner's list still answers, naming it by its id.
func TestDamagedHead(t *testing.T) {
	mem := membucket.New()
	ts := newServerWith(t, mem, server.Config{}, repository.Config{})
	c := ts.as(t, "acme", "alice")
	must(c.do("POST", "/v1/sessions", map[string]any{"id": "bad", "cwd": "/w"}))
	must(c.do("POST", "/v1/sessions", map[string]any{"id": "good", "cwd": "/w"}))
	garbage := []byte("{garbage")
	require.NoError(t, mem.Replace(t.Context(), "acme~alice/default/bad/HEAD.json", bytes.NewReader(garbage), int64(len(garbage)), bucket.PutOptions{}))

	status, h, resp := c.send(rawReq{method: "GET", path: "/v1/sessions/bad"})
	require.Equal(t, http.StatusInternalServerError, status, string(resp))
	e := requireEnvelope(t, status, h, resp, server.CodeInvalidSession)
	require.Contains(t, e.Error.Message, "HEAD.json")

	l := decode[server.ListResponse](t, must(c.do("GET", "/v1/sessions", nil)))
	require.Len(t, l.Sessions, 2)
	require.Equal(t, "bad", l.Sessions[0].ID)
	require.Equal(t, "/w", l.Sessions[1].Cwd)
}

// TestIdsOverTheSegmentLimit: an id or parentId longer than a segment's metadata
// can name (segment.MaxStringLen bytes) is the client's error, 400
// invalid_entry naming the entry's index, never a 500 from the segment encoder;
// nothing of the refused append is stored, and an id at the limit is stored.
func TestIdsOverTheSegmentLimit(t *testing.T) {
	long := strings.Repeat("i", segment.MaxStringLen+1)
	atLimit := strings.Repeat("j", segment.MaxStringLen)
	cases := []struct {
		name   string
		entry  json.RawMessage
		status int
		code   server.ErrorCode
	}{
		{"an id over the limit", msg(long, "u1", "user", "x"), 400, server.CodeInvalidEntry},
		{"a parentId over the limit", msg("n1", long, "user", "x"), 400, server.CodeInvalidEntry},
		{"an id at the limit", msg(atLimit, "u1", "user", "x"), 200, ""},
	}
	ts := newServer(t, backends[0].new(t), server.Config{})
	c := ts.as(t, "acme", "alice")
	must(c.do("POST", "/v1/sessions", map[string]any{"id": "s"}))
	must(c.do("POST", "/v1/sessions/s/entries", appendReq("", msg("u1", "", "user", "first"))))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, resp := c.do("POST", "/v1/sessions/s/entries", appendReq("u1", msg("u2", "u1", "user", "ok"), tc.entry))
			require.Equal(t, tc.status, status, string(resp))
			p := decode[page](t, must(c.do("GET", "/v1/sessions/s/entries", nil)))
			if tc.code == "" {
				require.Equal(t, 3, p.EntryCount)
				return
			}
			var e errResp
			require.NoError(t, json.Unmarshal(resp, &e))
			require.Equal(t, tc.code, e.Error.Code, string(resp))
			require.NotNil(t, e.Error.Index, string(resp))
			require.Equal(t, 1, *e.Error.Index)
			require.Equal(t, 1, p.EntryCount, "nothing of a refused append is stored")
		})
	}
}

// TestSessionMetadataBounded: what a strict session's head records, which every
// append reads and writes and every list reads, is bounded whatever the client
// sends: a cwd over repository.MaxCwdLen is refused (400) at create and fork,
// and a session_info entry's name over repository.MaxNameLen is stored whole
// but listed cut. Before, a 10 MiB cwd made every append of a small entry GET
// and PUT a 10 MiB head.
func TestSessionMetadataBounded(t *testing.T) {
	ts := newServer(t, backends[0].new(t), server.Config{})
	c := ts.as(t, "acme", "alice")
	long := strings.Repeat("c", repository.MaxCwdLen+1)
	for _, rq := range []struct{ path, id string }{{"/v1/sessions", "s"}, {"/v1/sessions/ok/fork", "f"}} {
		if rq.id == "f" {
			must(c.do("POST", "/v1/sessions", map[string]any{"id": "ok", "cwd": strings.Repeat("c", repository.MaxCwdLen)}))
		}
		status, resp := c.do("POST", rq.path, map[string]any{"id": rq.id, "cwd": long})
		require.Equal(t, http.StatusBadRequest, status, string(resp))
		require.Equal(t, server.CodeInvalidRequest, decode[errResp](t, resp).Error.Code)
		status, _ = c.do("GET", "/v1/sessions/"+rq.id, nil)
		require.Equal(t, http.StatusNotFound, status, "nothing was created")
	}

	name := strings.Repeat("é", repository.MaxNameLen) // 2 bytes each
	info := json.RawMessage(fmt.Sprintf(`{"type":"session_info","id":"n1","parentId":null,"timestamp":"2026-03-01T12:00:00.000Z","name":%q}`, name))
	must(c.do("POST", "/v1/sessions/ok/entries", appendReq("", info)))
	list := decode[struct {
		Sessions []metadata `json:"sessions"`
	}](t, must(c.do("GET", "/v1/sessions", nil)))
	require.Len(t, list.Sessions, 1)
	require.Equal(t, name[:repository.MaxNameLen], list.Sessions[0].Name, "cut at a character boundary")
	p := decode[page](t, must(c.do("GET", "/v1/sessions/ok/entries", nil)))
	require.Contains(t, string(p.Entries[0]), name, "the entry keeps the name whole")
}

// TestDamagedStrictSessionSaysSo: a strict session whose head commits a
// segment the bucket lost reads as the bucket holds it, but its metadata says
// it is damaged (it answered 200 as if whole before), and its appends are
// refused as before; a whole session has no such field.
func TestDamagedStrictSessionSaysSo(t *testing.T) {
	mem := membucket.New()
	ts := newServerWith(t, mem, server.Config{}, repository.Config{})
	c := ts.as(t, "acme", "alice")
	must(c.do("POST", "/v1/sessions", map[string]any{"id": "s", "cwd": "/w"}))
	must(c.do("POST", "/v1/sessions/s/entries", appendReq("", msg("u1", "", "user", "first"))))
	must(c.do("POST", "/v1/sessions/s/entries", appendReq("u1", msg("u2", "u1", "user", "second"))))
	whole := decode[server.SessionMetadata](t, must(c.do("GET", "/v1/sessions/s", nil)))
	require.Empty(t, whole.Damaged)

	var keys []string
	require.NoError(t, mem.List(t.Context(), bucket.ListOptions{Prefix: "acme~alice/default/s/L0/"}, func(oi bucket.ObjectInfo) error {
		keys = append(keys, oi.Key)
		return nil
	}))
	require.NotEmpty(t, keys)
	require.NoError(t, mem.Delete(t.Context(), keys[len(keys)-1])) // the segment of u2

	fresh := newServerWith(t, mem, server.Config{}, repository.Config{}).as(t, "acme", "alice")
	status, resp := fresh.do("GET", "/v1/sessions/s", nil)
	require.Equal(t, http.StatusOK, status, string(resp))
	meta := decode[server.SessionMetadata](t, resp)
	require.Contains(t, meta.Damaged, "missing")
	require.Contains(t, meta.Damaged, "transcript verify")
	status, resp = fresh.do("POST", "/v1/sessions/s/entries", appendReq(*meta.Head, msg("u3", *meta.Head, "user", "third")))
	require.Equal(t, http.StatusInternalServerError, status, string(resp))
}
