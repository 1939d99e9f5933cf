package reliability_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/s3test"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/s3bucket"
)

// ctxTimeout returns a context that ends after d or with the test.
func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// seeded returns a random source whose seed is logged and can be fixed with the
// environment variable RELIABILITY_SEED, so that a failing run can be repeated.
func seeded(t testing.TB) *mrand.Rand {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("RELIABILITY_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
	}
	t.Logf("seed %d (set RELIABILITY_SEED=%d to repeat)", seed, seed)
	return mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// randomName returns prefix followed by 12 random hex digits.
func randomName(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// s3Server is an S3 endpoint with its credentials.
type s3Server struct {
	endpoint, access, secret string
}

// sharedS3 returns the test MinIO of the environment (s3test.S3Endpoint: the
// test fails under CI=true when it is not set, and is skipped otherwise).
func sharedS3(t testing.TB) s3Server {
	e, a, s := s3test.S3Endpoint(t)
	return s3Server{e, a, s}
}

// open opens bucket name through endpoint (the server itself when empty).
func (srv s3Server) open(t testing.TB, name, endpoint string, create bool, timeout time.Duration, retries int) *s3bucket.Bucket {
	t.Helper()
	if endpoint == "" {
		endpoint = srv.endpoint
	}
	cfg := s3bucket.Config{
		Endpoint: endpoint, Bucket: name, Region: "us-east-1",
		AccessKey: srv.access, SecretKey: srv.secret, Insecure: true, Create: create,
		RequestTimeout: timeout, MaxRetries: retries,
	}
	// A server that has just started may answer "not initialized" for a moment
	// after it reports write quorum; that is retried with a bounded backoff.
	b, err := s3bucket.New(context.Background(), cfg)
	for wait := 50 * time.Millisecond; err != nil && notInitialized(err) && wait <= 3*time.Second; wait *= 2 {
		time.Sleep(wait)
		b, err = s3bucket.New(context.Background(), cfg)
	}
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// notInitialized reports MinIO's answer while it is still forming its erasure set.
func notInitialized(err error) bool {
	var resp minio.ErrorResponse
	return errors.As(err, &resp) && resp.Code == "XMinioServerNotInitialized"
}

// newBucket creates a fresh bucket on srv and removes it (with its objects) when the
// test ends; it returns the bucket's name.
func (srv s3Server) newBucket(t testing.TB, prefix string) string {
	t.Helper()
	name := randomName(prefix)
	b := srv.open(t, name, "", true, 30*time.Second, 0)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var keys []string
		if err := b.List(ctx, bucket.ListOptions{}, func(oi bucket.ObjectInfo) error {
			keys = append(keys, oi.Key)
			return nil
		}); err != nil {
			t.Logf("cleanup of bucket %s: %v", name, err)
			return
		}
		for _, k := range keys {
			_ = b.Delete(ctx, k)
		}
		_ = b.Client().RemoveBucket(ctx, name)
	})
	return name
}

// newStore returns a store over b, closed when the test ends.
func newStore(t testing.TB, b bucket.Bucket, prefix string) *transcript.Store {
	t.Helper()
	s, err := transcript.New(transcript.Config{Bucket: b, Prefix: prefix})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// prefixClosed returns an error naming the first entry of res whose parent is not
// in res, or whose parent comes after it: a reader must never see an entry
// without its parent.
func prefixClosed(res *transcript.MergeResult) error {
	pos := make(map[string]int, len(res.Entries))
	for i, e := range res.Entries {
		pos[e.ID] = i
	}
	for i, e := range res.Entries {
		if e.ParentID == "" {
			continue
		}
		p, ok := pos[e.ParentID]
		if !ok {
			return fmt.Errorf("entry %s (segment %s) without its parent %s", e.ID, e.Segment, e.ParentID)
		}
		if p > i {
			return fmt.Errorf("entry %s before its parent %s", e.ID, e.ParentID)
		}
	}
	return nil
}

// entryIDs returns the ids of res as a set.
func entryIDs(res *transcript.MergeResult) map[string]bool {
	ids := make(map[string]bool, len(res.Entries))
	for _, e := range res.Entries {
		ids[e.ID] = true
	}
	return ids
}

// loops runs background loops for a test until halt: writers, readers, a
// compaction job. A loop body that returns an error stops its loop and fails halt.
type loops struct {
	stop chan struct{}
	wg   sync.WaitGroup
	bad  atomic.Value // the first error
}

func newLoops() *loops { return &loops{stop: make(chan struct{})} }

// every calls fn(0), fn(1), ... every d until halt or until fn returns an error.
func (l *loops) every(d time.Duration, fn func(i int) error) {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for i := 0; ; i++ {
			select {
			case <-l.stop:
				return
			case <-time.After(d):
			}
			if err := fn(i); err != nil {
				l.bad.CompareAndSwap(nil, err)
				return
			}
		}
	}()
}

// halt stops every loop, waits for them, and returns the first error of a body.
func (l *loops) halt() error {
	close(l.stop)
	l.wg.Wait()
	err, _ := l.bad.Load().(error)
	return err
}

// readStats counts the reads of checkedReader.
type readStats struct{ ok, failed atomic.Int64 }

// checkedReader returns a loop body that reads refs in turn and checks every read
// that succeeds with readConsistent against this reader's earlier reads of the
// same session. A failed read (a fault) is counted and logged (the first three);
// a session with nothing uploaded yet is skipped.
func checkedReader(t testing.TB, ctx context.Context, store *transcript.Store, refs []transcript.TranscriptRef, timeout time.Duration, st *readStats) func(int) error {
	seen := map[transcript.TranscriptRef]map[string]bool{}
	return func(i int) error {
		ref := refs[i%len(refs)]
		rctx, cancel := context.WithTimeout(ctx, timeout)
		res, err := store.ReadAll(rctx, ref)
		cancel()
		if errors.Is(err, bucket.ErrNotFound) && len(seen[ref]) == 0 {
			return nil // nothing uploaded yet
		}
		if err != nil {
			if st.failed.Add(1) <= 3 {
				t.Logf("read of %s failed: %v", ref, err)
			}
			return nil
		}
		st.ok.Add(1)
		if err := readConsistent(res, seen[ref]); err != nil {
			return fmt.Errorf("read of %s: %w", ref, err)
		}
		seen[ref] = entryIDs(res)
		return nil
	}
}

// readConsistent checks one read: a prefix-closed tree without conflicts or
// corrupt segments that holds every id of before (an earlier read).
func readConsistent(res *transcript.MergeResult, before map[string]bool) error {
	if err := prefixClosed(res); err != nil {
		return err
	}
	if len(res.Conflicts) > 0 || len(res.Corrupt) > 0 || len(res.Invalid) > 0 {
		return fmt.Errorf("%d conflicts, %d corrupt segments, %d invalid entries", len(res.Conflicts), len(res.Corrupt), len(res.Invalid))
	}
	ids := entryIDs(res)
	for id := range before {
		if !ids[id] {
			return fmt.Errorf("entry %s seen by an earlier read is gone", id)
		}
	}
	return nil
}
