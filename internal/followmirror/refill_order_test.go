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

// gated holds back the PUTs of session segments while its gate is shut (the
// followers' markers go through), as a store that does not answer them yet.
type gated struct {
	bucket.Bucket
	gate    chan struct{} // closed: open
	waiting atomic.Int64  // PUTs held back now
}

func (g *gated) Put(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	if strings.Contains(key, "/L0/") {
		g.waiting.Add(1)
		select {
		case <-g.gate:
		case <-ctx.Done():
			g.waiting.Add(-1)
			return ctx.Err()
		}
		g.waiting.Add(-1)
	}
	return g.Bucket.Put(ctx, key, r, size, opts)
}

// TestFollow_RefillExportsInFileOrder: the store emptied while lines Pi
// wrote wait in the outbox (here behind another session's upload): the
// follower finds the session lost and uploads the file again from its
// start, taking those lines back from the outbox, so that the store's
// order (what export and restore print) is the file's. Left in the outbox,
// they landed first, and a line written after Pi went back to an earlier
// entry (a branch) came out ahead of the lines before it.
func TestFollow_RefillExportsInFileOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	mem := membucket.New()
	g := &gated{Bucket: mem, gate: make(chan struct{})}
	close(g.gate)
	store, err := transcript.New(transcript.Config{Bucket: g, Prefix: "p"})
	require.NoError(t, err)
	defer store.Close()
	up, err := followmirror.Open(store, followmirror.Config{Writer: transcript.NewRandomWriter(), OutboxDir: t.TempDir(), Workers: 1})
	require.NoError(t, err)
	defer func() { require.NoError(t, up.Close(ctx)) }()
	root := filepath.Join(t.TempDir(), "sessions")
	fl, err := follow.New(follow.Config{Root: root, StateDir: t.TempDir(), Uploader: up, Store: up, NoSync: true, NoWatch: true})
	require.NoError(t, err)
	defer fl.Close()

	dir := filepath.Join(root, "--w--")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	file := filepath.Join(dir, "2026-01-02T03-04-05-678Z_s.jsonl")
	write := func(p string, lines ...string) {
		t.Helper()
		f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		require.NoError(t, err)
		_, err = f.WriteString(strings.Join(lines, "\n") + "\n")
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	header := func(id string) string {
		return fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":"2026-01-02T03:04:05.678Z","cwd":"/w"}`, id)
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
	write(file, header("s"), entry("e1", ""), entry("e2", "e1"))
	once()
	require.NoError(t, up.Await(ctx))

	// The store stops answering segment PUTs: another session's first
	// upload waits in flight, and Pi's next lines (a branch from e1) queue
	// behind it.
	g.gate = make(chan struct{})
	write(filepath.Join(dir, "2026-01-02T03-04-05-679Z_x.jsonl"), header("x"), entry("x1", ""))
	once()
	require.Eventually(t, func() bool { return g.waiting.Load() == 1 }, 10*time.Second, time.Millisecond)
	write(file, entry("e3", "e1"))
	once()
	write(file, entry("e4", "e3"))
	once()

	// The bucket is emptied; Pi writes on.
	require.NoError(t, mem.List(ctx, bucket.ListOptions{}, func(o bucket.ObjectInfo) error { return mem.Delete(ctx, o.Key) }))
	write(file, entry("e5", "e4"))
	once()
	close(g.gate)
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
}
