package server_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/server"
)

// listPage is the answer to GET /v1/sessions.
type listPage struct {
	Sessions []metadata `json:"sessions"`
	Next     string     `json:"next"`
}

// TestListPagesAndFilters: GET /v1/sessions reports each session's cwd, pages in
// id order with a cursor ("next", passed back as "after") and a limit, filters by
// cwd, and answers a limit that is not an integer from 1 up as the client's
// error.
func TestListPagesAndFilters(t *testing.T) {
	c := newServer(t, backends[0].new(t), server.Config{}).as(t, "acme", "alice")
	cwds := map[string]string{"s1": "/a", "s2": "/b", "s3": "/a", "s4": "", "s5": "/a", "s6": "/b"}
	for _, id := range []string{"s4", "s2", "s6", "s1", "s5", "s3"} {
		must(c.do("POST", "/v1/sessions", map[string]any{"id": id, "cwd": cwds[id]}))
	}
	all := decode[listPage](t, must(c.do("GET", "/v1/sessions", nil)))
	require.Empty(t, all.Next)
	var ids []string
	for _, m := range all.Sessions {
		ids = append(ids, m.ID)
		require.Equal(t, cwds[m.ID], m.Cwd, "the cwd of %s", m.ID)
	}
	require.Equal(t, []string{"s1", "s2", "s3", "s4", "s5", "s6"}, ids)

	cases := []struct {
		query string
		limit int
		want  []string
	}{
		{"", 2, []string{"s1", "s2", "s3", "s4", "s5", "s6"}},
		{"&cwd=/a", 2, []string{"s1", "s3", "s5"}},
		{"&cwd=/b", 1, []string{"s2", "s6"}},
		{"&cwd=/none", 3, nil},
		{"", 100, []string{"s1", "s2", "s3", "s4", "s5", "s6"}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/limit=%d", tc.query, tc.limit), func(t *testing.T) {
			var got []string
			after := ""
			for pages := 0; ; pages++ {
				require.Less(t, pages, 10, "the cursor advances")
				p := decode[listPage](t, must(c.do("GET", fmt.Sprintf("/v1/sessions?limit=%d&after=%s%s", tc.limit, after, tc.query), nil)))
				require.LessOrEqual(t, len(p.Sessions), tc.limit)
				for _, m := range p.Sessions {
					got = append(got, m.ID)
				}
				if p.Next == "" {
					break
				}
				after = p.Next
			}
			require.Equal(t, tc.want, got)
		})
	}

	for _, q := range []string{"limit=0", "limit=-1", "limit=x", "limit=1.5"} {
		status, h, body := c.send(rawReq{method: "GET", path: "/v1/sessions?" + q})
		require.Equal(t, http.StatusBadRequest, status, q)
		require.Equal(t, "limit", requireEnvelope(t, status, h, body, server.CodeInvalidRequest).Error.Field, q)
	}
}
