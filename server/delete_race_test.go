package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/server"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

// pausingDeletes runs during after each delete of a key under the session
// prefix marker (a batch is one delete), once the bucket has done it: what a
// request that meets a DELETE part way sees.
type pausingDeletes struct {
	bucket.Bucket
	marker string
	mu     sync.Mutex
	during func(keys []string)
}

func (b *pausingDeletes) after(keys []string) {
	b.mu.Lock()
	f := b.during
	b.mu.Unlock()
	if f != nil && strings.Contains(keys[0], b.marker) {
		f(keys)
	}
}

func (b *pausingDeletes) Delete(ctx context.Context, key string) error {
	err := b.Bucket.Delete(ctx, key)
	b.after([]string{key})
	return err
}

func (b *pausingDeletes) DeleteBatch(ctx context.Context, keys []string) error {
	err := b.Bucket.DeleteBatch(ctx, keys)
	if len(keys) > 0 {
		b.after(keys)
	}
	return err
}

// TestDelete_StrictAppendAndReadsMeetingIt: a strict append that met a DELETE
// of its session part way (its segments gone, its head not yet) answered 500
// invalid_session, and a read then called the session damaged: the delete
// removed the head last. Every request that meets a delete part way finds the
// session gone (404) or as it was (an append: 409 at most), never damaged.
func TestDelete_StrictAppendAndReadsMeetingIt(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			b := &pausingDeletes{Bucket: be.new(t), marker: "/s/"}
			ts := newServer(t, b, server.Config{})
			c := ts.as(t, "acme", "alice")
			must(c.do("POST", "/v1/sessions", map[string]any{"id": "s", "strict": true}))
			must(c.do("POST", "/v1/sessions/s/entries", appendReq("", msg("u1", "", "user", "one"))))
			must(c.do("POST", "/v1/sessions/s/entries", appendReq("u1", msg("u2", "u1", "user", "two"))))
			// A replica that holds the session's handle, and one that never served it.
			held := newServer(t, b, server.Config{}).as(t, "acme", "alice")
			must(held.do("GET", "/v1/sessions/s", nil))

			var problems []string
			b.during = func(keys []string) {
				if code, body := held.do("POST", "/v1/sessions/s/entries", appendReq("u2", msg("u3", "u2", "user", "three"))); code >= 500 {
					problems = append(problems, fmt.Sprintf("held append after deleting %v: %d %s", keys, code, body))
				}
				fresh := newServer(t, b, server.Config{}).as(t, "acme", "alice")
				if code, body := fresh.do("POST", "/v1/sessions/s/entries", appendReq("u2", msg("u4", "u2", "user", "four"))); code != http.StatusNotFound && code != http.StatusConflict {
					problems = append(problems, fmt.Sprintf("append after deleting %v: %d %s", keys, code, body))
				}
				for _, path := range []string{"/v1/sessions/s", "/v1/sessions/s/entries"} {
					code, body := fresh.do("GET", path, nil)
					if code != http.StatusOK && code != http.StatusNotFound || strings.Contains(string(body), `"damaged"`) {
						problems = append(problems, fmt.Sprintf("GET %s after deleting %v: %d %s", path, keys, code, body))
					}
				}
			}
			code, body := c.do("DELETE", "/v1/sessions/s", nil)
			require.Equal(t, http.StatusNoContent, code, string(body))
			b.mu.Lock()
			b.during = nil
			b.mu.Unlock()
			require.Empty(t, problems)
			code, body = c.do("GET", "/v1/sessions/s", nil)
			require.Equal(t, http.StatusNotFound, code, string(body))
		})
	}
}
