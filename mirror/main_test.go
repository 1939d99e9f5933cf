package mirror_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

func TestMain(m *testing.M) {
	if os.Getenv(crashChildEnv) != "" {
		// The crash-test child is killed, never checked for leaks.
		os.Exit(m.Run())
	}
	goleak.VerifyTestMain(m,
		// Idle keep-alive connections of HTTP clients (the S3 backend) outlive tests.
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		// toxiproxy v2.5.0 leaves link goroutines blocked on channel sends after a
		// link closed; they are toxiproxy's, not the mirror's.
		goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/toxics.(*ToxicStub).Run"),
		goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/stream.(*ChanWriter).Write"),
		goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/stream.(*ChanReader).Read"),
	)
}

// newStore returns a store over b, closed at the end of the test.
func newStore(t testing.TB, b bucket.Bucket, prefix string) *transcript.Store {
	t.Helper()
	s, err := transcript.New(transcript.Config{Bucket: b, Prefix: prefix})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// newMirror opens a Mirror over store with a fresh (or the given) outbox and fast
// retries; the test closes it (Cleanup closes it too, with a short deadline).
func newMirror(t testing.TB, store *transcript.Store, outbox string, tune func(*mirror.Config)) *mirror.Mirror {
	t.Helper()
	if outbox == "" {
		outbox = t.TempDir()
	}
	w, err := transcript.NewWriter("test-writer")
	require.NoError(t, err)
	cfg := mirror.Config{
		Store: store, Writer: w, OutboxDir: outbox,
		MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond,
		RequestTimeout: 5 * time.Second,
		Logger:         slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
	if tune != nil {
		tune(&cfg)
	}
	m, err := mirror.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = m.Close(ctx)
	})
	return m
}

// testWriter sends log lines to the test log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// entry returns one realistic message entry.
func entry(id, parent string, turn int, text string) []byte {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(turn) * time.Second).Format(time.RFC3339Nano)
	return fmt.Appendf(nil, `{"type":"message","id":%q,"parentId":%s,"timestamp":%q,"message":{"role":"user","content":[{"type":"text","text":%q}]}}`,
		id, p, ts, text)
}

// session produces batches of a linear session.
type session struct {
	ref  transcript.TranscriptRef
	last string
	n    int
	ids  []string
}

func newSession(agent, id string) *session {
	return &session{ref: transcript.TranscriptRef{AgentID: agent, SessionID: id}}
}

// batch returns the next k entries of the session as a batch.
func (s *session) batch(k int) sessiontree.Batch {
	b := sessiontree.Batch{Ref: s.ref}
	for range k {
		s.n++
		id := fmt.Sprintf("%s-%05d", s.ref.SessionID, s.n)
		b.Entries = append(b.Entries, entry(id, s.last, s.n, "hello "+id))
		s.last = id
		s.ids = append(s.ids, id)
	}
	return b
}

// requireStored checks that the store holds exactly ids for ref, each once, with no
// conflicts.
func requireStored(t testing.TB, store *transcript.Store, ref transcript.TranscriptRef, ids []string) {
	t.Helper()
	got := requireOnce(t, store, ref)
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	require.Equal(t, want, got, "every flushed entry once")
}

// outboxFiles lists the files under dir/sub (relative, slash-separated).
func outboxFiles(t testing.TB, dir, sub string) []string {
	t.Helper()
	var out []string
	root := filepath.Join(dir, sub)
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == root {
			return filepath.SkipAll // not created yet
		}
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	require.NoError(t, err)
	return out
}

func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// requireOnce reads ref and checks that no entry id is stored twice (the segments hold
// as many entries as there are distinct ids) and that there are no conflicts. It
// returns the stored ids.
func requireOnce(t testing.TB, store *transcript.Store, ref transcript.TranscriptRef) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := store.ReadAll(ctx, ref)
	require.NoError(t, err)
	require.Empty(t, res.Conflicts)
	total := 0
	for _, info := range res.Segments {
		seg, err := store.ReadSegment(ctx, info.Key)
		require.NoError(t, err)
		total += len(seg.Entries)
	}
	ids := make(map[string]bool, len(res.Entries))
	for _, e := range res.Entries {
		ids[e.ID] = true
	}
	require.Equal(t, len(ids), total, "an entry is stored in more than one segment")
	return ids
}

// hungMirror is a Mirror over a store that answers no PUT until fb.Heal(): the
// setup of every test that needs segments to stay pending.
type hungMirror struct {
	mem   *membucket.Bucket   // the bucket behind the fault wrapper
	fb    *faultbucket.Bucket // the wrapper, hanging PUTs
	store *transcript.Store
	dir   string // the outbox
	m     *mirror.Mirror
	s     *session
	ctx   context.Context
}

func newHungMirror(t *testing.T, tune func(*mirror.Config)) *hungMirror {
	t.Helper()
	h := &hungMirror{mem: membucket.New(), dir: t.TempDir(), s: newSession("a", "s"), ctx: ctxTimeout(t, 10*time.Second)}
	h.fb = faultbucket.Wrap(h.mem)
	h.fb.Hang(faultbucket.OpPut)
	h.store = newStore(t, h.fb, "")
	h.m = newMirror(t, h.store, h.dir, tune)
	return h
}

// journalKeys returns the keys of the records in the outbox journal of dir, in
// append order.
func journalKeys(t testing.TB, dir string) []string {
	t.Helper()
	recs, err := mirror.ReadJournal(dir)
	require.NoError(t, err)
	var keys []string
	for _, r := range recs {
		keys = append(keys, r.Key)
	}
	return keys
}

// writePending stores batches of ref as segment files under dir/pending/, the way
// older versions of the outbox held them (and an operator moves them back from the
// quarantine), and returns their keys in flush order.
func writePending(t testing.TB, store *transcript.Store, dir string, batches ...sessiontree.Batch) []string {
	t.Helper()
	w, err := transcript.NewWriter("old-writer")
	require.NoError(t, err)
	var keys []string
	for _, b := range batches {
		objs, err := store.PrepareSegments(b.Ref, b.Entries, w)
		require.NoError(t, err)
		for _, o := range objs {
			p := filepath.Join(dir, "pending", filepath.FromSlash(o.Info.Key))
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, o.Data, 0o644))
			keys = append(keys, o.Info.Key)
		}
	}
	return keys
}
