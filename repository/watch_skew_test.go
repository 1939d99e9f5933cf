package repository_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
)

// Writers whose clocks are an hour fast and an hour slow write segments with keys
// far from each other's; Watch delivers every entry all the same, also after a
// compaction replaced the segments it had read.
func TestWatch_SkewedClocks(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			ctx := t.Context()
			e := newEnv(t, be.new(t))
			// skewed returns a repository of alice whose store's clock is off by d.
			skewed := func(name string, d time.Duration) *repository.Repository {
				s, err := transcript.New(transcript.Config{Bucket: e.bucket, Prefix: "data",
					Now: func() time.Time { return e.clock.Now().Add(d) }})
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, s.Close()) })
				r, err := repository.New(s, alice, repository.Config{Writer: transcriptWriter(t, name),
					Now: e.clock.Now, WatchInterval: 5 * time.Millisecond})
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, r.Close()) })
				return r
			}
			writers := []*repository.Repository{
				skewed("fast", time.Hour), skewed("slow", -time.Hour), skewed("exact", 0),
			}
			first, err := writers[2].Create(ctx, repository.CreateOptions{ID: "skew"})
			require.NoError(t, err)
			require.NoError(t, first.Append(ctx, msg("m0", "", "start")))

			// The watcher's store never reconciles by itself (no sync count or time
			// reaches its policy), so what finds the late segment below is the
			// Watch's own full listing every few seconds.
			ws, err := transcript.New(transcript.Config{Bucket: e.bucket, Prefix: "data", Now: e.clock.Now,
				Reconcile: transcript.ReconcilePolicy{Every: 1 << 30, After: 1000 * time.Hour}})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, ws.Close()) })
			wr, err := repository.New(ws, alice, repository.Config{Writer: transcriptWriter(t, "watcher"),
				Now: e.clock.Now, WatchInterval: 5 * time.Millisecond})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, wr.Close()) })
			w, err := wr.Open(ctx, "skew")
			require.NoError(t, err)
			wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			got := make(chan []string, 64)
			done := make(chan error, 1)
			go func() {
				done <- w.Watch(wctx, func(entries []sessiontree.Entry) error {
					got <- ids(entries)
					return nil
				})
			}()

			var want []string
			parent := "m0"
			for i := range 9 {
				s, err := writers[i%3].Open(ctx, "skew")
				require.NoError(t, err)
				id := fmt.Sprintf("m%d", i+1)
				require.NoError(t, s.Append(ctx, msg(id, parent, "turn")))
				want, parent = append(want, id), id
				if i == 4 {
					_, err := e.store.Compact(ctx, first.Ref(), transcript.CompactOptions{MinSegments: 2})
					require.NoError(t, err)
				}
			}
			// A replica whose clock is an hour slow and that never read the session
			// (an outbox flushing after an outage) stores a segment whose key sorts
			// far below what the watch has seen: only a full listing finds it.
			late, err := transcript.New(transcript.Config{Bucket: e.bucket, Prefix: "data",
				Now: func() time.Time { return e.clock.Now().Add(-time.Hour) }})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, late.Close()) })
			_, err = late.AppendSegment(ctx, first.Ref(), [][]byte{msg("late", parent, "from the outbox")}, transcriptWriter(t, "late"))
			require.NoError(t, err)
			want = append(want, "late")

			var delivered []string
			deadline := time.After(20 * time.Second)
			for len(delivered) < len(want) {
				select {
				case batch := <-got:
					delivered = append(delivered, batch...)
				case <-deadline:
					t.Fatalf("watch delivered %v, want %v", delivered, want)
				}
			}
			require.ElementsMatch(t, want, delivered)
			cancel()
			require.ErrorIs(t, <-done, context.Canceled)
		})
	}
}
