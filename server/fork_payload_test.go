package server_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/server"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// objectGets is a bucket that counts the GETs of segments and of payload
// objects (a strict session's head is neither).
type objectGets struct {
	bucket.Bucket
	segments, payloads atomic.Int32
}

func (b *objectGets) count(key string) {
	switch {
	case strings.Contains(key, "/payloads/"):
		b.payloads.Add(1)
	case strings.Contains(key, ".jsonl.zst"):
		b.segments.Add(1)
	}
}

func (b *objectGets) Get(ctx context.Context, key string) (io.ReadCloser, bucket.ObjectInfo, error) {
	b.count(key)
	return b.Bucket.Get(ctx, key)
}

func (b *objectGets) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	b.count(key)
	return b.Bucket.GetRange(ctx, key, off, n)
}

// TestFork_OfAServedSessionReadsNoSegment: the fork of a session the server
// holds open, whose images are stored outside its segments, reads none of its
// segments and no payload (the handle knows the references), and the fork
// reads back byte for byte.
func TestFork_OfAServedSessionReadsNoSegment(t *testing.T) {
	b := &objectGets{Bucket: membucket.New()}
	ts := newServer(t, b, server.Config{})
	c := ts.as(t, "acme", "alice")
	code, body := c.do("POST", "/v1/sessions", map[string]any{"id": "s1", "cwd": "/w"})
	require.Equal(t, http.StatusCreated, code, string(body))
	image := func(id, parent string, seed int) json.RawMessage {
		data := base64.StdEncoding.EncodeToString([]byte(strings.Repeat(fmt.Sprintf("img%d", seed), transcript.DefaultPayloadThreshold/4)))
		p := "null"
		if parent != "" {
			p = fmt.Sprintf("%q", parent)
		}
		return json.RawMessage(fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-03-01T12:00:00.000Z","message":{"role":"user","content":[{"type":"image","data":%q,"mimeType":"image/png"}]}}`, id, p, data))
	}
	want := []json.RawMessage{image("u1", "", 1), msg("a1", "u1", "assistant", "a cat"), image("u2", "a1", 2), msg("a2", "u2", "assistant", "a dog")}
	code, body = c.do("POST", "/v1/sessions/s1/entries", appendReq("", want[0], want[1]))
	require.Equal(t, http.StatusOK, code, string(body))
	code, body = c.do("POST", "/v1/sessions/s1/entries", appendReq("a1", want[2], want[3]))
	require.Equal(t, http.StatusOK, code, string(body))
	b.segments.Store(0)
	b.payloads.Store(0)

	code, body = c.do("POST", "/v1/sessions/s1/fork", map[string]any{"id": "f1", "entryId": "a2"})
	require.Equal(t, http.StatusCreated, code, string(body))
	require.Zero(t, b.segments.Load(), "the fork reads no segment of the source")
	require.Zero(t, b.payloads.Load(), "the fork reads no payload")

	p := decode[page](t, must(c.do("GET", "/v1/sessions/f1/entries", nil)))
	require.Len(t, p.Entries, len(want))
	for i, e := range p.Entries {
		require.Equal(t, string(want[i]), string(e))
	}
}
