package repository_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// TestPayloads_ListReadsNone: a session holding a large image opens and forks
// byte for byte; List reads no payload (it still lists the session when the payload
// object is gone, which Open then reports).
func TestPayloads_ListReadsNone(t *testing.T) {
	ctx := context.Background()
	b := membucket.New()
	e := newEnv(t, b)
	r := e.repo(alice)
	s, err := r.Create(ctx, repository.CreateOptions{Name: "shots"})
	require.NoError(t, err)
	data := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("png!", transcript.DefaultPayloadThreshold/4)))
	img := fmt.Appendf(nil, `{"type":"message","id":"m1","parentId":null,"timestamp":"2026-03-01T12:00:00.000Z","message":{"role":"user","content":[{"type":"image","data":%q,"mimeType":"image/png"}]}}`, data)
	require.NoError(t, s.Append(ctx, img))

	fork, err := r.Fork(ctx, s.ID(), "m1")
	require.NoError(t, err)
	for _, id := range []string{s.ID(), fork.ID()} {
		got, err := r.Open(ctx, id)
		require.NoError(t, err)
		entries, err := got.Entries(ctx)
		require.NoError(t, err)
		found := false
		for _, en := range entries {
			if en.ID() == "m1" {
				require.Equal(t, string(img), string(en.Raw()))
				found = true
			}
		}
		require.True(t, found)
	}

	var payloads []string
	require.NoError(t, b.List(ctx, bucket.ListOptions{Prefix: "data/"}, func(oi bucket.ObjectInfo) error {
		if strings.Contains(oi.Key, "/payloads/") {
			payloads = append(payloads, oi.Key)
		}
		return nil
	}))
	require.Len(t, payloads, 1, "the fork stores no second copy")
	require.NoError(t, b.Delete(ctx, payloads[0]))
	infos, err := r.List(ctx)
	require.NoError(t, err)
	require.Len(t, infos, 2)
	_, err = r.Open(ctx, s.ID())
	require.ErrorIs(t, err, transcript.ErrPayloadMissing)
}
