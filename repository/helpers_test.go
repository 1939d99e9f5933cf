package repository_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/transcriptstore/transcript/internal/s3test"
	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/filebucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// backends are the buckets the repository suite (strict mode and its races
// included) runs over: memory, a directory and each S3 engine. Each call returns a
// fresh, empty bucket that is removed when the test ends.
var backends = []struct {
	name string
	new  func(t testing.TB) bucket.Bucket
}{
	{"mem", func(testing.TB) bucket.Bucket { return membucket.New() }},
	{"file", func(t testing.TB) bucket.Bucket {
		b, err := filebucket.New(t.TempDir())
		require.NoError(t, err)
		return b
	}},
	{"minio", newMinioBucket},
	{"seaweedfs", func(t testing.TB) bucket.Bucket { return s3test.SeaweedFS().NewBucket(t, "repository-") }},
}

// newMinioBucket creates a uniquely named bucket on the test MinIO (failing under
// CI=true when it is unreachable, skipping otherwise) and removes it afterwards.
func newMinioBucket(t testing.TB) bucket.Bucket { return s3test.NewS3Bucket(t, "repository-") }

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond) // every reading is later: keys and timestamps order
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// env is one store over one bucket, shared by the repositories of a test.
type env struct {
	t      testing.TB
	bucket bucket.Bucket
	store  *transcript.Store
	clock  *clock
	n      int
}

func newEnv(t testing.TB, b bucket.Bucket) *env {
	c := newClock()
	s, err := transcript.New(transcript.Config{Bucket: b, Prefix: "data", Now: c.Now})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return &env{t: t, bucket: b, store: s, clock: c}
}

var (
	alice = repository.Owner{Tenant: "acme", User: "alice@acme.example"}
	bob   = repository.Owner{Tenant: "acme", User: "bob@acme.example"}
)

// repo returns a repository of owner with its own writer (a replica).
func (e *env) repo(owner repository.Owner) *repository.Repository {
	e.n++
	w, err := transcript.NewWriter(fmt.Sprintf("replica-%d", e.n))
	require.NoError(e.t, err)
	r, err := repository.New(e.store, owner, repository.Config{
		Writer: w, Now: e.clock.Now, WatchInterval: 5 * time.Millisecond, WatchMargin: time.Second,
	})
	require.NoError(e.t, err)
	e.t.Cleanup(func() { require.NoError(e.t, r.Close()) })
	return r
}

// msg is a user message entry.
func msg(id, parent, text string) []byte {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	return fmt.Appendf(nil, `{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-03-01T12:00:00.000Z","message":{"role":"user","content":%q,"timestamp":1772366400000}}`,
		id, p, text)
}

// leaf is a leaf entry moving the active leaf to target.
func leaf(id, parent, target string) []byte {
	return fmt.Appendf(nil, `{"type":"leaf","id":%q,"parentId":%q,"timestamp":"2026-03-01T12:00:00.000Z","targetId":%q}`,
		id, parent, target)
}

// ids returns the ids of entries.
func ids[E interface{ ID() string }](entries []E) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.ID()
	}
	return out
}

// keys lists every key under prefix.
func keys(t testing.TB, b bucket.Bucket, prefix string) []string {
	t.Helper()
	var out []string
	require.NoError(t, b.List(context.Background(), bucket.ListOptions{Prefix: prefix}, func(oi bucket.ObjectInfo) error {
		out = append(out, oi.Key)
		return nil
	}))
	return out
}

// sessionPrefix is where session s keeps its objects.
func sessionPrefix(s *repository.Session) string {
	ref := s.Ref()
	return "data/" + ref.Namespace + "/" + ref.AgentID + "/" + ref.SessionID + "/"
}

// transcriptWriter returns a writer with id name.
func transcriptWriter(t testing.TB, name string) *transcript.Writer {
	w, err := transcript.NewWriter(name)
	require.NoError(t, err)
	return w
}
