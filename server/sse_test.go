package server_test

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// sseEvent is one event of a stream: its id, name ("" for an entry) and data.
type sseEvent struct {
	ID, Event, Data string
}

// sseStream is an open event stream, read in the background.
type sseStream struct {
	Status int
	Header http.Header
	events chan sseEvent
	done   chan struct{} // closed when the stream ended (the reader returned)

	mu       sync.Mutex
	comments []string
	cancel   context.CancelFunc
}

// stream opens GET path as c's owner, with Last-Event-ID lastID unless empty. It
// returns once the response's header arrived; the stream is closed when the
// test ends.
func (c *client) stream(path, lastID string) *sseStream {
	c.t.Helper()
	ctx, cancel := context.WithCancel(c.t.Context())
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+path, nil)
	require.NoError(c.t, err)
	req.Header.Set("Authorization", "Bearer "+c.token)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(c.t, err)
	s := &sseStream{Status: resp.StatusCode, Header: resp.Header, events: make(chan sseEvent, 1024), done: make(chan struct{}), cancel: cancel}
	go s.read(resp)
	c.t.Cleanup(s.Close)
	return s
}

// read parses the events of resp's body until it ends.
func (s *sseStream) read(resp *http.Response) {
	defer close(s.done)
	defer close(s.events)
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	var ev sseEvent
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "":
			if ev.Data != "" || ev.Event != "" {
				s.events <- ev
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, ":"):
			s.mu.Lock()
			s.comments = append(s.comments, strings.TrimSpace(line[1:]))
			s.mu.Unlock()
		default:
			k, v, _ := strings.Cut(line, ": ")
			switch k {
			case "id":
				ev.ID = v
			case "event":
				ev.Event = v
			case "data":
				ev.Data = v
			}
		}
	}
}

// Close closes the stream and waits for its reader.
func (s *sseStream) Close() {
	s.cancel()
	<-s.done
}

// next returns the next event, or false when the stream ended or none came
// within timeout.
func (s *sseStream) next(timeout time.Duration) (sseEvent, bool) {
	select {
	case ev, ok := <-s.events:
		return ev, ok
	case <-time.After(timeout):
		return sseEvent{}, false
	}
}

// take returns the next n events, failing the test when they do not come in
// time.
func (s *sseStream) take(t *testing.T, n int) []sseEvent {
	t.Helper()
	out := make([]sseEvent, 0, n)
	for len(out) < n {
		ev, ok := s.next(10 * time.Second)
		require.True(t, ok, "event %d of %d did not come (got %v)", len(out)+1, n, out)
		out = append(out, ev)
	}
	return out
}

// ended reports whether the stream ended within timeout, with no event left.
func (s *sseStream) ended(timeout time.Duration) bool {
	select {
	case <-s.done:
		return len(s.events) == 0
	case <-time.After(timeout):
		return false
	}
}

// heartbeats counts the heartbeat comments received so far.
func (s *sseStream) heartbeats() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.comments {
		if c == "ping" {
			n++
		}
	}
	return n
}

// entryIDs returns the ids of the entries the events carry, checking that the
// event ids are the sequence numbers from first on.
func entryIDs(t *testing.T, evs []sseEvent, first int) []string {
	t.Helper()
	var out []string
	for i, ev := range evs {
		require.Empty(t, ev.Event, "an entry event: %+v", ev)
		require.Equal(t, strconv.Itoa(first+i), ev.ID)
		out = append(out, decode[struct{ ID string }](t, []byte(ev.Data)).ID)
	}
	return out
}
