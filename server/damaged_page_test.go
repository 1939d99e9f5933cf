package server_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/server"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// TestDamagedStrictSessionPagesAndEventsSaySo: a damaged strict session (its
// head commits a segment the bucket lost) said so only in its metadata: a
// client reading its entries pages or its event stream (Pi's adapter reads
// pages, a watcher only events) took what it read for the whole session. Each
// page carries "damaged" too (the first page of an open included), and the
// stream sends an event "damaged" (no id: Last-Event-ID is untouched) before
// its entries; a whole session's pages and stream carry neither.
func TestDamagedStrictSessionPagesAndEventsSaySo(t *testing.T) {
	mem := membucket.New()
	ts := newServerWith(t, mem, server.Config{}, repository.Config{})
	c := ts.as(t, "acme", "alice")
	must(c.do("POST", "/v1/sessions", map[string]any{"id": "s", "cwd": "/w"}))
	must(c.do("POST", "/v1/sessions/s/entries", appendReq("", msg("u1", "", "user", "first"))))
	must(c.do("POST", "/v1/sessions/s/entries", appendReq("u1", msg("u2", "u1", "user", "second"))))
	requireDamaged := func(c *client, want bool) {
		t.Helper()
		for _, path := range []string{"/v1/sessions/s/entries", "/v1/sessions/s/entries?after=1", "/v1/sessions/s?entries=10"} {
			var p struct {
				Damaged *string `json:"damaged"`
				Page    *struct {
					Damaged *string `json:"damaged"`
				} `json:"page"`
			}
			require.NoError(t, json.Unmarshal(must(c.do("GET", path, nil)), &p))
			if p.Page != nil {
				p.Damaged = p.Page.Damaged
			}
			if !want {
				require.Nil(t, p.Damaged, "GET %s: omitted when whole", path)
				continue
			}
			require.NotNil(t, p.Damaged, "GET %s", path)
			require.Contains(t, *p.Damaged, "missing", path)
		}
		st := c.stream("/v1/sessions/s/events", "")
		require.Equal(t, http.StatusOK, st.Status)
		ev, ok := st.next(5 * time.Second)
		require.True(t, ok)
		if !want {
			require.Empty(t, ev.Event, "the first event is an entry: %+v", ev)
			return
		}
		require.Equal(t, "damaged", ev.Event, "%+v", ev)
		require.Empty(t, ev.ID)
		require.Contains(t, decode[map[string]string](t, []byte(ev.Data))["damaged"], "missing")
		ev, ok = st.next(5 * time.Second)
		require.True(t, ok)
		require.Equal(t, "1", ev.ID, "then the entries: %+v", ev)
	}
	requireDamaged(c, false)

	var keys []string
	require.NoError(t, mem.List(t.Context(), bucket.ListOptions{Prefix: "acme~alice/default/s/L0/"}, func(oi bucket.ObjectInfo) error {
		keys = append(keys, oi.Key)
		return nil
	}))
	require.NotEmpty(t, keys)
	require.NoError(t, mem.Delete(t.Context(), keys[len(keys)-1])) // the segment of u2
	requireDamaged(newServerWith(t, mem, server.Config{}, repository.Config{}).as(t, "acme", "alice"), true)
}
