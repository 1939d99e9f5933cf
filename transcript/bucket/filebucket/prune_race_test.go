package filebucket_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/filebucket"
)

// TestBucket_PutRacesPrune runs writers that create keys in a deep directory while
// others delete their own keys there, so that Delete keeps pruning the directories a
// Put is creating. Every write path (create-only Put, Replace, and both conditional
// forms) must succeed: a parent that vanishes mid-create is created again.
func TestBucket_PutRacesPrune(t *testing.T) {
	const (
		workers = 6
		rounds  = 40
	)
	writes := map[string]func(b *filebucket.Bucket, key string) error{
		"put": func(b *filebucket.Bucket, key string) error {
			return b.Put(t.Context(), key, strings.NewReader("x"), 1, bucket.PutOptions{Checksum: "c"})
		},
		"replace": func(b *filebucket.Bucket, key string) error {
			return b.Replace(t.Context(), key, strings.NewReader("x"), 1, bucket.PutOptions{})
		},
		"put-if-none-match": func(b *filebucket.Bucket, key string) error {
			_, err := b.PutIf(t.Context(), key, strings.NewReader("x"), 1, bucket.Cond{IfNoneMatch: true})
			return err
		},
	}
	for name, write := range writes {
		t.Run(name, func(t *testing.T) {
			b, err := filebucket.New(t.TempDir())
			require.NoError(t, err)
			errs := make(chan error, workers)
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range rounds {
						// Half the workers share the deep directory, the others
						// a sibling whose pruning removes the common parents.
						key := fmt.Sprintf("ns/a/b/c%d/d/k-%d-%d", w%2, w, i)
						if err := write(b, key); err != nil {
							errs <- fmt.Errorf("round %d: %w", i, err)
							return
						}
						if err := b.Delete(t.Context(), key); err != nil {
							errs <- fmt.Errorf("round %d: %w", i, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			require.Empty(t, files(t, b.Dir()), "every key was deleted and every directory pruned")
		})
	}
}
