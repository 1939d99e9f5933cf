package server_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/server"
)

// TestHostile_SessionIDsAsSent: a session id in a body (a create's, a fork's)
// names the session the request makes, or none. encoding/json decodes a lone
// UTF-16 surrogate escape ("\ud800", which JSON.stringify writes for a
// JavaScript string holding one) as U+FFFD, so a create of "s\ud800" answered
// 201 with a session named "s\ufffd": another id than the one sent, which the
// client cannot name in a path either (encodeURIComponent throws on it). Such
// an id is not UTF-8, which session ids are: 400, as for invalid UTF-8 in a
// path. U+FFFD sent as itself is an id like any other.
func TestHostile_SessionIDsAsSent(t *testing.T) {
	c := newServer(t, backends[0].new(t), server.Config{}).as(t, "acme", "alice")
	must(c.do("POST", "/v1/sessions", map[string]any{"id": "src"}))
	for _, tc := range []struct {
		name, path, body string
		status           int
		id               string // of the session made, for a 201
	}{
		{"create with a lone high surrogate", "/v1/sessions", `{"id":"s\ud800"}`, http.StatusBadRequest, ""},
		{"create with a lone low surrogate, key in another case", "/v1/sessions", `{"ID":"s\udc00x"}`, http.StatusBadRequest, ""},
		{"create with U+FFFD escaped", "/v1/sessions", `{"id":"r\ufffd"}`, http.StatusCreated, "r\ufffd"},
		{"create with U+FFFD as itself", "/v1/sessions", "{\"id\":\"q\ufffd\"}", http.StatusCreated, "q\ufffd"},
		{"create with a surrogate pair", "/v1/sessions", `{"id":"p\ud83d\ude00"}`, http.StatusCreated, "p\U0001F600"},
		{"fork to a lone surrogate", "/v1/sessions/src/fork", `{"id":"f\ud800"}`, http.StatusBadRequest, ""},
		{"fork to U+FFFD", "/v1/sessions/src/fork", `{"id":"f\ufffd"}`, http.StatusCreated, "f\ufffd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, h, body := c.send(rawReq{method: "POST", path: tc.path, contentType: "application/json", body: tc.body})
			require.Equal(t, tc.status, status, string(body))
			if tc.status != http.StatusCreated {
				e := requireEnvelope(t, status, h, body, server.CodeInvalidRequest)
				require.Equal(t, "id", e.Error.Field)
				require.Contains(t, e.Error.Message, "not valid UTF-8")
				return
			}
			require.Equal(t, tc.id, decode[server.SessionMetadata](t, body).ID)
		})
	}
	list := decode[server.ListResponse](t, must(c.do("GET", "/v1/sessions", nil)))
	var ids []string
	for _, s := range list.Sessions {
		ids = append(ids, s.ID)
	}
	require.ElementsMatch(t, []string{"src", "r\ufffd", "q\ufffd", "p\U0001F600", "f\ufffd"}, ids, "no session under another id")
}
