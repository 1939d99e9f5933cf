package followmirror_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/follow"
	"github.com/transcriptstore/transcript/internal/followmirror"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// deletable is a bucket that can be deleted and created again: while gone,
// every request fails as S3 answers NoSuchBucket (bucket.ErrNoBucket).
type deletable struct {
	*membucket.Bucket
	gone    atomic.Bool
	refused atomic.Int64 // session segment PUTs refused while gone
	// hold, when not nil, holds session segment PUTs back until closed.
	hold chan struct{}
}

var errNoSuchBucket = fmt.Errorf("NoSuchBucket: %w", bucket.ErrNoBucket)

func (d *deletable) Put(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	if d.hold != nil && strings.Contains(key, "/L0/") {
		select {
		case <-d.hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if d.gone.Load() {
		if strings.Contains(key, "/L0/") {
			d.refused.Add(1)
		}
		return errNoSuchBucket
	}
	return d.Bucket.Put(ctx, key, r, size, opts)
}

func (d *deletable) PutIf(ctx context.Context, key string, r io.Reader, size int64, cond bucket.Cond) (string, error) {
	if d.gone.Load() {
		return "", errNoSuchBucket
	}
	return d.Bucket.PutIf(ctx, key, r, size, cond)
}

func (d *deletable) Get(ctx context.Context, key string) (io.ReadCloser, bucket.ObjectInfo, error) {
	if d.gone.Load() {
		return nil, bucket.ObjectInfo{}, errNoSuchBucket
	}
	return d.Bucket.Get(ctx, key)
}

func (d *deletable) Stat(ctx context.Context, key string) (bucket.ObjectInfo, error) {
	if d.gone.Load() {
		return bucket.ObjectInfo{}, errNoSuchBucket
	}
	return d.Bucket.Stat(ctx, key)
}

func (d *deletable) List(ctx context.Context, opts bucket.ListOptions, fn func(bucket.ObjectInfo) error) error {
	if d.gone.Load() {
		return errNoSuchBucket
	}
	return d.Bucket.List(ctx, opts, fn)
}

// TestFollow_BucketDeletedWhileOutboxHolds: the bucket is deleted while a
// line Pi wrote waits in the outbox (its PUT fails: the outbox retries it),
// and created again empty. The follower finds the bucket missing and takes
// the line back before the bucket is back, so that it does not land there
// ahead of the session's header; its refill then puts the file in the store
// in the file's order, and a branch exports in order. Left in the outbox,
// the line landed first, for good.
func TestFollow_BucketDeletedWhileOutboxHolds(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	mem := membucket.New()
	d := &deletable{Bucket: mem}
	store, err := transcript.New(transcript.Config{Bucket: d, Prefix: "p"})
	require.NoError(t, err)
	defer store.Close()
	up, err := followmirror.Open(store, followmirror.Config{Writer: transcript.NewRandomWriter(), OutboxDir: t.TempDir(), Workers: 1})
	require.NoError(t, err)
	defer func() { require.NoError(t, up.Close(ctx)) }()
	root := filepath.Join(t.TempDir(), "sessions")
	var lost atomic.Int64
	fl, err := follow.New(follow.Config{Root: root, StateDir: t.TempDir(), Uploader: up, Store: up, NoSync: true, NoWatch: true,
		OnEvent: func(ev follow.Event) {
			if ev.Kind == follow.EventLost {
				lost.Add(1)
			}
		}})
	require.NoError(t, err)
	defer fl.Close()

	dir := filepath.Join(root, "--w--")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	file := filepath.Join(dir, "2026-01-02T03-04-05-678Z_s.jsonl")
	write := func(lines ...string) {
		t.Helper()
		f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		require.NoError(t, err)
		_, err = f.WriteString(strings.Join(lines, "\n") + "\n")
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	entry := func(id, parent string) string {
		p := "null"
		if parent != "" {
			p = fmt.Sprintf("%q", parent)
		}
		return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-01-02T03:04:06.000Z","message":{"role":"user","content":%q}}`, id, p, id)
	}
	once := func() {
		t.Helper()
		require.NoError(t, fl.Once(ctx))
	}
	write(`{"type":"session","version":3,"id":"s","timestamp":"2026-01-02T03:04:05.678Z","cwd":"/w"}`, entry("e1", ""), entry("e2", "e1"))
	once()
	require.NoError(t, up.Await(ctx))

	// Pi branches from e1; the bucket is deleted before the line is uploaded.
	d.hold = make(chan struct{})
	write(entry("e3", "e1"))
	once()
	d.gone.Store(true)
	close(d.hold)
	require.Eventually(t, func() bool { return d.refused.Load() > 0 }, 10*time.Second, time.Millisecond)
	once() // the follower looks for its marker: the bucket is missing
	require.Zero(t, up.PendingSegments(), "the line is taken back")
	require.Equal(t, int64(1), lost.Load())

	// The bucket is created again, empty.
	require.NoError(t, mem.List(ctx, bucket.ListOptions{}, func(o bucket.ObjectInfo) error { return mem.Delete(ctx, o.Key) }))
	d.gone.Store(false)
	once()
	require.NoError(t, up.Await(ctx))

	res, err := store.ReadAll(ctx, transcript.TranscriptRef{Namespace: transcript.DefaultNamespace, AgentID: "--w--", SessionID: "s"})
	require.NoError(t, err)
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var got []string
	for _, raw := range res.Raw() {
		got = append(got, string(raw))
	}
	require.Equal(t, strings.Split(strings.TrimSuffix(string(data), "\n"), "\n"), got, "the store's order is the file's")
	require.Equal(t, int64(1), lost.Load(), "one loss, one lost event")
}
