package main

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSmallLimitsLeaveRoomForProbes: with a --max-connections of 2 to 4, as
// with 5, event streams take at most four fifths of the connections (rounded
// down), so that a health probe is still answered while every stream the
// server takes is open; a stream past them is answered 503.
func TestSmallLimitsLeaveRoomForProbes(t *testing.T) {
	for _, tc := range []struct{ conns, streams int }{{2, 1}, {3, 2}, {4, 3}, {6, 4}} {
		t.Run(strconv.Itoa(tc.conns), func(t *testing.T) {
			p := start(t, "file://"+t.TempDir(), "--max-connections", strconv.Itoa(tc.conns))
			tok := mint(t, "acme", "alice")
			code, body := call(t, p.addr, tok, "POST", "/v1/sessions", `{"id":"s"}`)
			require.Equal(t, http.StatusCreated, code, body)
			open := func() int {
				ctx, cancel := context.WithCancel(t.Context())
				req, err := http.NewRequestWithContext(ctx, "GET", "http://"+p.addr+"/v1/sessions/s/events", nil)
				require.NoError(t, err)
				req.Header.Set("Authorization", "Bearer "+tok)
				resp, err := (&http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}).Do(req)
				require.NoError(t, err)
				t.Cleanup(func() { cancel(); _ = resp.Body.Close() })
				return resp.StatusCode
			}
			for range tc.streams {
				require.Equal(t, http.StatusOK, open())
			}
			require.Equal(t, http.StatusServiceUnavailable, open(), "a stream past four fifths")
			code, err := get(&http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 2 * time.Second}, p.addr, "/healthz")
			require.NoError(t, err, "a probe while the streams are open")
			require.Equal(t, http.StatusOK, code)
		})
	}
}
