package server_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/server"
)

// heapAlloc returns the bytes of the live heap, after a collection.
func heapAlloc() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestHostile_IdleStreamsHoldNoPage: an event stream that caught up with a
// large session holds no copy of what it sent while it waits for more. Each
// stream buffered its pages (up to Config.MaxPageBytes, 4 MiB by default) in a
// buffer it kept for as long as it stayed open, idle or not: watchers of long
// sessions, hours open, held megabytes each (16 streams of one owner, 4,096 of
// a server).
func TestHostile_IdleStreamsHoldNoPage(t *testing.T) {
	const streams, entries, size = 16, 40, 200 << 10 // two pages of 4 MiB
	ts := newServer(t, backends[0].new(t), server.Config{})
	c := bigSession(t, ts, entries, size)
	open := make([]*sseStream, streams)
	for i := range open {
		open[i] = c.stream("/v1/sessions/s/events", "")
		require.Len(t, open[i].take(t, entries), entries)
	}
	idle := heapAlloc()
	for _, s := range open {
		s.Close()
	}
	require.Eventually(t, func() bool {
		return strings.Contains(string(must(c.do("GET", "/metrics", nil))), "\ntranscript_serve_event_streams 0\n")
	}, 10*time.Second, 10*time.Millisecond, "the server ends the streams")
	closed := heapAlloc()
	require.Less(t, int64(idle)-int64(closed), int64(16<<20),
		"%d idle streams hold %d MiB more than none", streams, (int64(idle)-int64(closed))>>20)
}

// TestHostile_UnreadStreamsHoldLittle: an event stream whose client does not
// read holds a chunk of what it sends, not a page: a stream buffered a whole
// page (up to Config.MaxPageBytes, 4 MiB by default) before writing it, and
// held it until the write timed out (Config.RequestTimeout).
func TestHostile_UnreadStreamsHoldLittle(t *testing.T) {
	const streams, entries, size = 16, 40, 200 << 10
	ts := newServer(t, backends[0].new(t), server.Config{})
	c := bigSession(t, ts, entries, size)
	must(c.do("GET", "/v1/sessions/s/entries", nil)) // the handle is cached: its entries are not the streams'
	before := heapAlloc()
	tok := tokenFor(t, "acme", "alice")
	for range streams {
		conn := slowGet(t, ts, tok, "/v1/sessions/s/events")
		defer conn.Close()
		// Read past the header and the first event's start: the stream is
		// sending its entries, and waits for the client to read on.
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
		got := 0
		for got < 4096 {
			n, err := conn.Read(make([]byte, 4096-got))
			require.NoError(t, err)
			got += n
		}
	}
	held := int64(heapAlloc()) - int64(before)
	require.Less(t, held, int64(streams<<20), "%d unread streams hold %d MiB", streams, held>>20)
}
