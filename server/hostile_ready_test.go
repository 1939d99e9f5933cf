package server_test

import (
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/server"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// TestHostile_ReadyzAsksTheBucketOnce: /readyz, unauthenticated, asks the
// bucket at most once per server.ReadyAge, however many probes arrive: each
// probe was a request to the bucket, so anyone who reached the server could
// send the bucket as many requests as it liked, at every owner's cost.
func TestHostile_ReadyzAsksTheBucketOnce(t *testing.T) {
	b, requests := countingBucket(t, membucket.New())
	ts := newServer(t, b, server.Config{})
	c := &client{t: t, base: ts.URL}
	before := requests()
	var wg sync.WaitGroup
	codes := make(chan int, 80)
	for range 8 {
		wg.Go(func() {
			for range 10 {
				code, _ := c.do("GET", "/readyz", nil)
				codes <- code
			}
		})
	}
	wg.Wait()
	close(codes)
	for code := range codes {
		require.Equal(t, http.StatusOK, code)
	}
	// 80 probes, within a few ReadyAge at most on a slow machine.
	require.LessOrEqual(t, requests()-before, 3, "bucket requests for 80 probes")
}
