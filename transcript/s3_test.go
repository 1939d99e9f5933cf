package transcript_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/internal/s3test"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/filebucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
	"github.com/transcriptstore/transcript/transcript/bucket/s3bucket"
)

var benchBucketSeq atomic.Int64

// s3BenchBucket returns a constructor of fresh MinIO buckets, or nil when no MinIO is
// configured (benchmarks then run against memory only).
func s3BenchBucket(b *testing.B) func(b *testing.B) bucket.Bucket {
	endpoint := os.Getenv("TRANSCRIPT_TEST_S3_ENDPOINT")
	if endpoint == "" {
		return nil
	}
	return func(b *testing.B) bucket.Bucket {
		name := fmt.Sprintf("transcript-bench-%d-%d", os.Getpid(), benchBucketSeq.Add(1))
		bk, err := s3bucket.New(context.Background(), s3bucket.Config{
			Endpoint: endpoint, Bucket: name, Insecure: true, Create: true,
		})
		require.NoError(b, err)
		return bk
	}
}

// testBackends returns constructors of a fresh empty bucket on every backend: memory,
// a local directory and each S3 engine, MinIO and SeaweedFS (skipped when not
// configured, failed under CI=true).
func testBackends() map[string]func(t *testing.T) bucket.Bucket {
	backends := map[string]func(t *testing.T) bucket.Bucket{
		"mem": func(*testing.T) bucket.Bucket { return membucket.New() },
		"file": func(t *testing.T) bucket.Bucket {
			b, err := filebucket.New(t.TempDir())
			require.NoError(t, err)
			return b
		},
	}
	for _, e := range s3test.Engines() {
		backends[e.Name] = func(t *testing.T) bucket.Bucket { return e.NewBucket(t, "transcript-store-") }
	}
	return backends
}

// TestStore_Backends runs the store's write/merge path, with concurrent writers, over
// every backend of testBackends.
func TestStore_Backends(t *testing.T) {
	backends := testBackends()
	for name, newBucket := range backends {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := newStore(t, newBucket(t), transcript.Config{Prefix: "tenant-data"})
			const writers, perWriter = 4, 10
			errs := make(chan error, writers*perWriter)
			var wg sync.WaitGroup
			for i := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					w := newWriter(t, fmt.Sprintf("replica-%d", i))
					for j := range perWriter {
						_, err := s.AppendSegment(ctx, ref, [][]byte{entry("root", ""), entry(fmt.Sprintf("r%d-%d", i, j), "root")}, w)
						errs <- err
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			res, err := s.ReadAll(ctx, ref)
			require.NoError(t, err)
			require.Len(t, res.Entries, 1+writers*perWriter, "root collapses, every replica's entries survive")
			require.Equal(t, "root", res.Entries[0].ID)
			require.Empty(t, res.Conflicts)
			require.Len(t, res.Segments, writers*perWriter)

			sessions, err := s.ListSessions(ctx, ref.Namespace, ref.AgentID)
			require.NoError(t, err)
			require.Equal(t, []string{ref.SessionID}, sessions)
			require.NoError(t, s.Delete(ctx, ref))
			_, err = s.ReadAll(ctx, ref)
			require.ErrorIs(t, err, bucket.ErrNotFound)
		})
	}
}
