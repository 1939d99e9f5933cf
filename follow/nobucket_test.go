package follow_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/follow"
)

// BucketMissing is the remote's follow.BucketWatcher channel.
func (r *remote) BucketMissing() <-chan struct{} { return r.missing }

// deleteBucket deletes the remote's bucket: what it stored and the markers
// are gone, and until recreateBucket every request fails with
// bucket.ErrNoBucket; the outbox keeps what is pending, retrying it, and
// tells the follower (signal) as a mirror whose upload found the bucket
// missing does.
func (r *remote) deleteBucket(signal bool) {
	r.wipe()
	r.mu.Lock()
	r.gone = true
	r.mu.Unlock()
	if signal {
		select {
		case r.missing <- struct{}{}:
		default:
		}
	}
}

// recreateBucket creates the remote's bucket again, empty.
func (r *remote) recreateBucket() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gone = false
}

// TestFollower_BucketDeleted: a bucket deleted while the outbox holds lines of
// a session (handed over after the store had its header) and created again
// before the follower's next look for its marker: the follower takes those
// lines back as soon as its own request or the uploader finds the bucket
// missing, so they do not land in the new bucket ahead of the header; once
// the bucket is back, the file is uploaded again whole, in the file's order.
// One lost event; while the bucket is missing no file is read nor retried.
func TestFollower_BucketDeleted(t *testing.T) {
	lines := []string{header("s1"), entry("e1", "", "hi"), entry("e2", "e1", "yo"), entry("e3", "e2", "hey")}
	for _, tt := range []struct {
		name string
		run  bool // Run, told by the uploader; else Once (a cron run), whose look for the marker finds it
	}{{"run: the uploader tells", true}, {"once: the marker's look finds it", false}} {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t)
			fx.tune = func(c *follow.Config) { c.RescanInterval = time.Hour }
			fx.write(fileA, lines[:2]...)
			fx.write(fileB, header("s2"), entry("f1", "", "hey"))
			require.NoError(t, fx.once())
			fx.remote.direct = false // the outbox holds what is handed over from now on
			fx.appendRaw(fileA, lines[2]+"\n")
			fx.appendRaw(fileA, lines[3]+"\n")
			require.NoError(t, fx.once())
			fx.take(follow.EventUploaded)

			if tt.run {
				// Deleted under a running follower, between two looks for
				// its marker (an hour apart): the uploader says so.
				fx.remote.mu.Lock()
				looks := fx.remote.markerChecks
				fx.remote.mu.Unlock()
				f := fx.open()
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan error, 1)
				go func() { done <- f.Run(ctx) }()
				require.Eventually(t, func() bool {
					fx.remote.mu.Lock()
					defer fx.remote.mu.Unlock()
					return fx.remote.markerChecks > looks
				}, 10*time.Second, time.Millisecond)
				fx.remote.deleteBucket(true)
				require.Eventually(t, func() bool {
					fx.remote.mu.Lock()
					defer fx.remote.mu.Unlock()
					return len(fx.remote.pending) == 0
				}, 10*time.Second, time.Millisecond)
				cancel()
				require.NoError(t, <-done)
				require.NoError(t, f.Close())
				fx.remote.mu.Lock()
				require.Equal(t, looks+1, fx.remote.markerChecks, "taken back before the next look")
				fx.remote.mu.Unlock()
			} else {
				fx.remote.deleteBucket(false)
				require.NoError(t, fx.once())
			}
			lost := fx.take(follow.EventLost)
			require.Len(t, lost, 1)
			require.Contains(t, lost[0].Message, "taking back the lines of the 2 files handed over")
			fx.remote.recreateBucket()
			fx.remote.flush() // the outbox uploads what it still holds
			require.NoError(t, fx.once())
			fx.remote.flush()
			requireOnce(t, fx.remote, refOf("s1"), lines...)
			requireOnce(t, fx.remote, refOf("s2"), header("s2"), entry("f1", "", "hey"))
			require.Empty(t, fx.take(follow.EventLost), "one loss, one lost event")
			require.Empty(t, fx.take(follow.EventConflict))
		})
	}
}
