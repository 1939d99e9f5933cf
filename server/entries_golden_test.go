package server_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/server"
)

// updateGoldenEnv rewrites the server's golden files when set to 1.
const updateGoldenEnv = "SERVER_UPDATE_GOLDEN"

// TestEntriesPageGolden: an entries page is written by hand from the stored
// bytes of its entries; its bytes (entries as appended, escapes and non-ASCII
// text untouched, the envelope's fields in order) are those of
// testdata/entries-page.json. Pages are read as the adapter reads them: from
// the start, one held inside the handle, the last one and the empty one after it.
func TestEntriesPageGolden(t *testing.T) {
	c := newServer(t, backends[0].new(t), server.Config{}).as(t, "acme", "alice")
	must(c.do("POST", "/v1/sessions", map[string]any{"id": "s"}))
	must(c.do("POST", "/v1/sessions/s/entries", map[string]any{"expectedHead": nil, "entries": []any{
		msg("u1", "", "user", "héllo \u2028 \"quoted\" <tag> & \\ back"),
		msg("a1", "u1", "assistant", "日本語 ✓"),
		msg("u2", "a1", "user", "third"),
	}}))
	var got []byte
	for _, q := range []string{"", "?after=0&limit=2", "?after=2", "?after=3"} {
		code, body := c.do("GET", "/v1/sessions/s/entries"+q, nil)
		require.Equal(t, http.StatusOK, code, string(body))
		got = append(got, body...)
	}
	path := filepath.Join("testdata", "entries-page.json")
	if os.Getenv(updateGoldenEnv) == "1" {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run with %s=1 to create it", updateGoldenEnv)
	require.Equal(t, string(want), string(got))
}
