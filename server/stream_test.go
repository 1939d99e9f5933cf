package server_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/server"
	"github.com/transcriptstore/transcript/transcript"
)

// appendChain appends entries from..to-1 of a chain (ids m%03d, each the child of
// the one before) through c, each at the head.
func appendChain(t *testing.T, c *client, id string, from, to int) []string {
	t.Helper()
	var ids []string
	for i := from; i < to; i++ {
		eid, parent := fmt.Sprintf("m%03d", i), ""
		if i > 0 {
			parent = fmt.Sprintf("m%03d", i-1)
		}
		must(c.do("POST", "/v1/sessions/"+id+"/entries", appendReq(parent, msg(eid, parent, "user", eid))))
		ids = append(ids, eid)
	}
	return ids
}

// TestEventStream: a stream sends what the session holds after "after", then each
// committed entry (through this server at once, through another on the same
// bucket within the watch interval), with the sequence number as event id and
// heartbeats while idle; Last-Event-ID resumes exactly and wins over "after".
func TestEventStream(t *testing.T) {
	for _, be := range backends[:2] {
		t.Run(be.name, func(t *testing.T) {
			b := be.new(t)
			cfg := server.Config{WatchInterval: 20 * time.Millisecond, Heartbeat: 50 * time.Millisecond}
			c := newServer(t, b, cfg).as(t, "acme", "alice")
			other := newServer(t, b, cfg).as(t, "acme", "alice")
			must(c.do("POST", "/v1/sessions", map[string]any{"id": "s"}))
			want := appendChain(t, c, "s", 0, 3)

			st := c.stream("/v1/sessions/s/events", "")
			require.Equal(t, http.StatusOK, st.Status)
			require.Equal(t, "text/event-stream", st.Header.Get("Content-Type"))
			require.Equal(t, want, entryIDs(t, st.take(t, 3), 1))
			want = append(want, appendChain(t, c, "s", 3, 5)...)
			require.Equal(t, want[3:5], entryIDs(t, st.take(t, 2), 4), "appended through this server")
			want = append(want, appendChain(t, other, "s", 5, 7)...)
			require.Equal(t, want[5:7], entryIDs(t, st.take(t, 2), 6), "appended through another server")
			require.Eventually(t, func() bool { return st.heartbeats() >= 2 }, 10*time.Second, 10*time.Millisecond)

			resumed := c.stream("/v1/sessions/s/events?after=1", "4")
			require.Equal(t, want[4:7], entryIDs(t, resumed.take(t, 3), 5))
			fromQuery := other.stream("/v1/sessions/s/events?after=6", "")
			require.Equal(t, want[6:7], entryIDs(t, fromQuery.take(t, 1), 7))
			want = append(want, appendChain(t, other, "s", 7, 8)...)
			for _, s := range []*sseStream{st, resumed, fromQuery} {
				require.Equal(t, want[7:8], entryIDs(t, s.take(t, 1), 8))
			}

			for _, bad := range []struct{ path, lastID, field string }{
				{"/v1/sessions/s/events?after=-1", "", "after"},
				{"/v1/sessions/s/events", "x", "Last-Event-ID"},
			} {
				s := c.stream(bad.path, bad.lastID)
				require.Equal(t, http.StatusBadRequest, s.Status)
			}
			require.Equal(t, http.StatusNotFound, c.stream("/v1/sessions/nope/events", "").Status)
		})
	}
}

// TestEventStreamEnds: a stream ends with an "error" event when its session is
// deleted, with "reset" when a default-mode session's sequence changes under it,
// and without an event when the server ends its streams (new ones are then 503).
func TestEventStreamEnds(t *testing.T) {
	b := backends[0].new(t)
	ts := newServer(t, b, server.Config{WatchInterval: 20 * time.Millisecond})
	c := ts.as(t, "acme", "alice")
	other := newServer(t, b, server.Config{}).as(t, "acme", "alice")

	must(c.do("POST", "/v1/sessions", map[string]any{"id": "gone"}))
	appendChain(t, c, "gone", 0, 1)
	st := c.stream("/v1/sessions/gone/events", "")
	st.take(t, 1)
	code, _ := other.do("DELETE", "/v1/sessions/gone", nil)
	require.Equal(t, http.StatusNoContent, code)
	ev := st.take(t, 1)[0]
	require.Equal(t, "error", ev.Event)
	require.Equal(t, server.CodeNotFound, decode[errResp](t, []byte(ev.Data)).Error.Code)
	require.True(t, st.ended(10*time.Second))

	// A default-mode session takes a segment whose key sorts before the entries
	// the stream sent (a writer whose clock is a minute behind and that had not
	// read the session): the sequence changed, the stream says so and ends.
	must(c.do("POST", "/v1/sessions", map[string]any{"id": "loose", "strict": false}))
	appendChain(t, c, "loose", 0, 2)
	st = c.stream("/v1/sessions/loose/events", "")
	st.take(t, 2)
	behind, err := transcript.New(transcript.Config{Bucket: b, Now: func() time.Time { return time.Now().Add(-time.Minute) }})
	require.NoError(t, err)
	ref := transcript.TranscriptRef{Namespace: "acme~alice", AgentID: "default", SessionID: "loose"}
	_, err = behind.AppendSegment(t.Context(), ref, [][]byte{msg("x1", "", "user", "late")}, transcript.NewRandomWriter())
	require.NoError(t, err)
	ev = st.take(t, 1)[0]
	require.Equal(t, "reset", ev.Event)
	require.Equal(t, map[string]int{"entryCount": 3}, decode[map[string]int](t, []byte(ev.Data)))
	require.True(t, st.ended(10*time.Second))
	p := decode[page](t, must(c.do("GET", "/v1/sessions/loose/entries", nil)))
	require.Equal(t, "x1", decode[struct{ ID string }](t, p.Entries[0]).ID, "the new sequence is the merge order")

	st = c.stream("/v1/sessions/loose/events", "3")
	ts.srv.EndStreams()
	require.True(t, st.ended(10*time.Second), "streams end when the server ends them")
	late := c.stream("/v1/sessions/loose/events", "")
	require.Equal(t, http.StatusServiceUnavailable, late.Status)
	require.NotEmpty(t, late.Header.Get("Retry-After"))
}

// TestEventStreamBounds: an owner holds at most MaxStreamsPerOwner streams (then
// 429 too_many_streams with Retry-After, in the envelope), another owner is not
// held back, and a closed stream frees its place.
func TestEventStreamBounds(t *testing.T) {
	ts := newServer(t, backends[0].new(t), server.Config{MaxStreamsPerOwner: 2})
	alice, bob := ts.as(t, "acme", "alice"), ts.as(t, "acme", "bob")
	for _, c := range []*client{alice, bob} {
		must(c.do("POST", "/v1/sessions", map[string]any{"id": "s"}))
	}
	first := alice.stream("/v1/sessions/s/events", "")
	alice.stream("/v1/sessions/s/events", "")
	code, h, body := alice.send(rawReq{method: "GET", path: "/v1/sessions/s/events"})
	require.Equal(t, http.StatusTooManyRequests, code, string(body))
	requireEnvelope(t, code, h, body, server.CodeTooManyStreams)
	require.NotEmpty(t, h.Get("Retry-After"))
	require.Equal(t, http.StatusOK, bob.stream("/v1/sessions/s/events", "").Status)
	first.Close()
	require.Eventually(t, func() bool {
		s := alice.stream("/v1/sessions/s/events", "")
		defer s.Close()
		return s.Status == http.StatusOK
	}, 10*time.Second, 20*time.Millisecond)
}
