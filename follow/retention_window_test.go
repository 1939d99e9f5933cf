package follow_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/follow"
	"github.com/transcriptstore/transcript/transcript"
)

var _ follow.RetentionChecker = (*remote)(nil)

// RetentionMarked reports whether a retention policy marked ref (a
// follow.RetentionChecker).
func (r *remote) RetentionMarked(_ context.Context, ref transcript.TranscriptRef) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gone {
		return false, errNoBucket
	}
	return r.retention[ref], nil
}

// retain marks ref for deletion, as a retention run does a delete delay
// before it deletes the session.
func (r *remote) retain(ref transcript.TranscriptRef) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.retention == nil {
		r.retention = map[transcript.TranscriptRef]bool{}
	}
	r.retention[ref] = true
}

// retire deletes ref as the retention run that marked it does: its segments,
// then its mark.
func (r *remote) retire(ref transcript.TranscriptRef) {
	r.wipe(ref)
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.retention, ref)
}

// TestFollower_RetentionWithinLossSettle: after a lost marker the follower
// asks about every file again for a while, to catch an emptying that deleted
// its marker before the sessions; a session that retention deletes then (one
// it marked for deletion, before the loss or after it, a delete delay before
// it deleted the session) stays deleted while its file does not grow, while
// the sessions the emptying deletes come back. Its file growing uploads it
// again, as after any retention.
func TestFollower_RetentionWithinLossSettle(t *testing.T) {
	s1 := []string{header("s1"), entry("e1", "", "hi")}
	s2 := []string{header("s2"), entry("f1", "", "hey")}
	for _, tt := range []struct {
		name       string
		markBefore bool // retention marked s1 before the loss (else after it)
	}{{"marked before the loss", true}, {"marked after the loss", false}} {
		for _, cron := range []bool{false, true} {
			t.Run(tt.name+map[bool]string{false: ", one process", true: ", cron"}[cron], func(t *testing.T) {
				fx := newFixture(t)
				now := time.Now()
				fx.tune = func(c *follow.Config) { c.Now = func() time.Time { return now } }
				fx.write(fileA, s1...)
				fx.write(fileB, s2...)
				f := fx.open()
				run := func() {
					t.Helper()
					if cron {
						require.NoError(t, f.Close())
						f = fx.open()
					}
					require.NoError(t, f.Once(t.Context()))
				}
				run()
				if tt.markBefore {
					fx.remote.retain(refOf("s1"))
				}

				// A purge deletes the marker first.
				fx.remote.mu.Lock()
				fx.remote.markers = map[string][]byte{}
				fx.remote.mu.Unlock()
				run()
				require.Len(t, fx.take(follow.EventLost), 1)
				if !tt.markBefore {
					fx.remote.retain(refOf("s1"))
					now = now.Add(follow.DefaultRescanInterval)
					run()
				}

				// Retention deletes s1; the purge deletes s2.
				fx.remote.retire(refOf("s1"))
				fx.remote.wipe(refOf("s2"))
				for range 4 {
					now = now.Add(2 * follow.DefaultRescanInterval)
					run()
				}
				require.Empty(t, fx.remote.all(refOf("s1")), "retention's delete is not undone")
				requireOnce(t, fx.remote, refOf("s2"), s2...)

				// Pi writes to s1's file again: it comes back whole.
				fx.appendRaw(fileA, entry("e2", "e1", "yo")+"\n")
				now = now.Add(follow.DefaultRescanInterval)
				run()
				requireOnce(t, fx.remote, refOf("s1"), append(append([]string{}, s1...), entry("e2", "e1", "yo"))...)
			})
		}
	}
}
