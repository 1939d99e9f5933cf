package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/server"
)

// postAppend appends entry i of a chain through base as the owner of token,
// from any goroutine (it returns its error rather than failing the test).
func postAppend(base, token, id string, i int) error {
	eid, parent := fmt.Sprintf("m%03d", i), ""
	if i > 0 {
		parent = fmt.Sprintf("m%03d", i-1)
	}
	body, err := json.Marshal(appendReq(parent, msg(eid, parent, "user", eid)))
	if err != nil {
		return err
	}
	req, err := http.NewRequest("POST", base+"/v1/sessions/"+id+"/entries", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("append %s: %d %s", eid, resp.StatusCode, data)
	}
	return nil
}

// TestEventStreamAcrossServersAndRestart: two servers on one bucket; a client
// appends through one while another client streams from the other, which is
// restarted half way (its streams end, a new server takes its place) and resumed
// from Last-Event-ID: the streaming client sees every entry exactly once, in
// the order committed.
func TestEventStreamAcrossServersAndRestart(t *testing.T) {
	for _, be := range backends[:2] {
		t.Run(be.name, func(t *testing.T) {
			b := be.new(t)
			cfg := server.Config{WatchInterval: 20 * time.Millisecond}
			writer := newServer(t, b, cfg).as(t, "acme", "alice")
			must(writer.do("POST", "/v1/sessions", map[string]any{"id": "s"}))
			const n = 60
			appended := make(chan error, 1)
			go func() {
				for i := range n {
					if err := postAppend(writer.base, writer.token, "s", i); err != nil {
						appended <- err
						return
					}
				}
				appended <- nil
			}()

			first := newServer(t, b, cfg)
			st := first.as(t, "acme", "alice").stream("/v1/sessions/s/events", "")
			require.Equal(t, http.StatusOK, st.Status)
			var got []sseEvent
			got = append(got, st.take(t, n/3)...)
			// Restart: the server ends its streams and closes; what the client
			// had received before the end still counts.
			first.srv.EndStreams()
			first.Close()
			first.srv.Close()
			for ev, ok := st.next(10 * time.Second); ok; ev, ok = st.next(10 * time.Second) {
				got = append(got, ev)
			}
			require.True(t, st.ended(time.Second))

			second := newServer(t, b, cfg)
			resumed := second.as(t, "acme", "alice").stream("/v1/sessions/s/events", got[len(got)-1].ID)
			require.Equal(t, http.StatusOK, resumed.Status)
			got = append(got, resumed.take(t, n-len(got))...)
			require.NoError(t, <-appended)
			want := make([]string, n)
			for i := range want {
				want[i] = fmt.Sprintf("m%03d", i)
			}
			require.Equal(t, want, entryIDs(t, got, 1), "every entry once, in order")
			ev, ok := resumed.next(100 * time.Millisecond)
			require.False(t, ok, "nothing more: %+v", ev)
		})
	}
}
