package mirror_test

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/faultbucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// orderBucket records the keys of successful Puts in the order they completed.
type orderBucket struct {
	bucket.Bucket
	mu   sync.Mutex
	keys []string
}

func (b *orderBucket) Put(ctx context.Context, key string, r io.Reader, size int64, opts bucket.PutOptions) error {
	err := b.Bucket.Put(ctx, key, r, size, opts)
	if err == nil {
		b.mu.Lock()
		b.keys = append(b.keys, key)
		b.mu.Unlock()
	}
	return err
}

// TestMirror_SessionOrder checks that a session's segments reach the store in the
// order they were flushed even when the first one needs retries and idle workers
// could take the next: a later segment's entries name earlier ones as parents, so
// a reader must never find it before them. Other sessions are not held up.
func TestMirror_SessionOrder(t *testing.T) {
	for _, restart := range []bool{false, true} {
		name := "live"
		if restart {
			name = "resumed_from_outbox"
		}
		t.Run(name, func(t *testing.T) {
			ob := &orderBucket{Bucket: membucket.New()}
			fb := faultbucket.Wrap(ob)
			store := newStore(t, fb, "")
			outbox := t.TempDir()
			s1, s2 := newSession("a", "s1"), newSession("a", "s2")
			ctx := ctxTimeout(t, 20*time.Second)
			tune := func(c *mirror.Config) {
				c.Workers = 4
				c.MinBackoff, c.MaxBackoff = 100*time.Millisecond, 200*time.Millisecond
			}
			if restart {
				// An earlier process accepted the segments but stored none.
				fb.Hang(faultbucket.OpPut)
				m := newMirror(t, store, outbox, tune)
				for range 6 {
					require.NoError(t, m.Upload(ctx, s1.batch(2)))
				}
				cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
				require.Error(t, m.Close(cctx))
				cancel()
				fb.Heal()
			}
			// The first PUT fails (transiently) and is retried after a backoff during
			// which the other workers are idle.
			fb.FailNext(faultbucket.OpPut, 1, nil)
			m := newMirror(t, store, outbox, tune)
			for range 6 {
				require.NoError(t, m.Upload(ctx, s1.batch(2)))
				require.NoError(t, m.Upload(ctx, s2.batch(1)))
			}
			require.NoError(t, m.AwaitQuiescence(ctx))
			require.NoError(t, m.Close(ctx))
			segs, err := store.ListSegments(ctx, s1.ref)
			require.NoError(t, err)
			var want []string // s1's keys in flush order
			for _, s := range segs {
				want = append(want, s.Key) // key order is flush order for one writer
			}
			var got []string
			for _, k := range ob.keys {
				for _, w := range want {
					if k == w {
						got = append(got, k)
					}
				}
			}
			if restart {
				require.Len(t, want, 12)
			} else {
				require.Len(t, want, 6)
			}
			require.Equal(t, want, got, "a session's segments are stored in flush order")
			requireStored(t, store, s2.ref, s2.ids)
		})
	}
}
