package repository_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// TestPayloads_ListReadsNone: a session holding a large image opens and forks
// byte for byte; List and ListPage read no payload (they still list the session
// when the payload object is gone, which Open then reports).
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
	page, err := r.ListPage(ctx, repository.ListOptions{})
	require.NoError(t, err, "the summaries are derived without the payload")
	require.Len(t, page.Sessions, 2)
	_, err = r.Open(ctx, s.ID())
	require.ErrorIs(t, err, transcript.ErrPayloadMissing)
}

// payloadGets is a bucket that counts the GETs of payload objects.
type payloadGets struct {
	bucket.Bucket
	n atomic.Int32
}

func (b *payloadGets) Get(ctx context.Context, key string) (io.ReadCloser, bucket.ObjectInfo, error) {
	if strings.Contains(key, "/payloads/") {
		b.n.Add(1)
	}
	return b.Bucket.Get(ctx, key)
}

func (b *payloadGets) GetRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if strings.Contains(key, "/payloads/") {
		b.n.Add(1)
	}
	return b.Bucket.GetRange(ctx, key, off, n)
}

// TestPayloads_ForkCopiesReferences: forking an open session (whole, at an entry,
// strict or not) fetches no payload object and stores none; the fork's segment
// keeps the references, and the fork reads back byte for byte.
func TestPayloads_ForkCopiesReferences(t *testing.T) {
	data := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("png!", transcript.DefaultPayloadThreshold/4)))
	img := fmt.Appendf(nil, `{"type":"message","id":"m1","parentId":null,"timestamp":"2026-03-01T12:00:00.000Z","message":{"role":"user","content":[{"type":"image","data":%q,"mimeType":"image/png"}]}}`, data)
	reply := []byte(`{"type":"message","id":"m2","parentId":"m1","timestamp":"2026-03-01T12:00:01.000Z","message":{"role":"assistant","content":[{"type":"text","text":"a cat"}]}}`)
	for _, be := range backends {
		for _, tc := range []struct {
			name   string
			strict bool
			opts   repository.ForkOptions
			want   []string
		}{
			{"whole", false, repository.ForkOptions{Whole: true}, []string{"m1", "m2"}},
			{"at the image", false, repository.ForkOptions{At: "m1"}, []string{"m1"}},
			{"strict, at the reply", true, repository.ForkOptions{At: "m2"}, []string{"m1", "m2"}},
		} {
			t.Run(be.name+"/"+tc.name, func(t *testing.T) {
				ctx := context.Background()
				b := &payloadGets{Bucket: be.new(t)}
				e := newEnv(t, b)
				r := e.repo(alice)
				s, err := r.Create(ctx, repository.CreateOptions{Strict: tc.strict})
				require.NoError(t, err)
				require.NoError(t, s.Append(ctx, img, reply))
				before := payloadObjects(t, b)
				b.n.Store(0)

				fork, err := r.ForkSession(ctx, s, tc.opts)
				require.NoError(t, err)
				require.Zero(t, b.n.Load(), "the fork fetches no payload")
				require.Equal(t, before, payloadObjects(t, b), "the fork stores no payload")
				requireRaws(t, fork, tc.want, map[string][]byte{"m1": img, "m2": reply})

				stored, err := e.store.Stored().ReadAll(ctx, fork.Ref())
				require.NoError(t, err)
				for _, en := range stored.Entries {
					if en.ID == "m1" {
						require.Len(t, en.Refs, 1, "the fork's segment keeps the reference")
					}
				}
				require.Len(t, stored.Segments, 1)
				seg, err := e.store.Stored().ReadSegment(ctx, stored.Segments[0].Key)
				require.NoError(t, err)
				require.False(t, seg.Meta.HasResolvedChecksum, "references copied, not payloads taken out again")
				got, err := r.Open(ctx, fork.ID())
				require.NoError(t, err)
				requireRaws(t, got, tc.want, map[string][]byte{"m1": img, "m2": reply})
			})
		}
	}
}

// payloadObjects returns the keys of the payload objects b holds.
func payloadObjects(t *testing.T, b bucket.Bucket) []string {
	t.Helper()
	var out []string
	require.NoError(t, b.List(context.Background(), bucket.ListOptions{Prefix: "data/"}, func(oi bucket.ObjectInfo) error {
		if strings.Contains(oi.Key, "/payloads/") {
			out = append(out, oi.Key)
		}
		return nil
	}))
	return out
}

// requireRaws checks that s holds the entries ids, in order, byte for byte as raws
// names them.
func requireRaws(t *testing.T, s *repository.Session, ids []string, raws map[string][]byte) {
	t.Helper()
	entries, err := s.Entries(context.Background())
	require.NoError(t, err)
	var got []string
	for _, en := range entries {
		if raw, ok := raws[en.ID()]; ok {
			got = append(got, en.ID())
			require.Equal(t, string(raw), string(en.Raw()), en.ID())
		}
	}
	require.Equal(t, ids, got)
}
