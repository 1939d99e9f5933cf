package follow_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/follow"
	"github.com/transcriptstore/transcript/transcript"
)

// fileB is a second session file of the fixture's folder.
const fileB = piFolder + "/2026-01-02T03-04-05-679Z_s2.jsonl"

// TestFollower_StoreLostSession: a store that lost what the follower handed
// over (the bucket deleted and created again empty, or a session's prefix
// deleted) gets the whole file again, header first, when the file grows: no
// entry is handed over into a session the store lacks, and a session the store
// still holds is not uploaded again. The uploader (the outbox) holding the
// session counts as holding it.
func TestFollower_StoreLostSession(t *testing.T) {
	s1 := []string{header("s1"), entry("e1", "", "hi")}
	s2 := []string{header("s2"), entry("f1", "", "hey")}
	tests := []struct {
		name   string
		lose   func(r *remote)
		direct bool // the uploader stores at once (else it keeps the batch pending)
		// want1 and want2 are what the remote holds of s1 and s2 at the end.
		want1, want2 []string
		rewritten    int
	}{
		{
			name:      "bucket emptied",
			lose:      func(r *remote) { r.wipe() },
			direct:    true,
			want1:     append(append([]string{}, s1...), entry("e2", "e1", "yo")),
			want2:     append(append([]string{}, s2...), entry("f2", "f1", "yes")),
			rewritten: 2,
		},
		{
			name:      "one session's prefix deleted",
			lose:      func(r *remote) { r.wipe(refOf("s1")) },
			direct:    true,
			want1:     append(append([]string{}, s1...), entry("e2", "e1", "yo")),
			want2:     []string{header("s2"), entry("f1", "", "hey"), entry("f2", "f1", "yes")},
			rewritten: 1,
		},
		{
			name:   "bucket emptied, the outbox still holding the sessions",
			lose:   func(r *remote) { r.wipe() },
			direct: false,
			// The outbox uploads what it holds after the wipe: nothing is lost.
			want1: append(append([]string{}, s1...), entry("e2", "e1", "yo")),
			want2: append(append([]string{}, s2...), entry("f2", "f1", "yes")),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t)
			fx.remote.direct = tt.direct
			fx.write(fileA, s1...)
			fx.write(fileB, s2...)
			require.NoError(t, fx.once())
			tt.lose(fx.remote)
			fx.take(follow.EventUploaded)
			fx.appendRaw(fileA, entry("e2", "e1", "yo")+"\n")
			fx.appendRaw(fileB, entry("f2", "f1", "yes")+"\n")
			require.NoError(t, fx.once())
			fx.remote.flush()
			requireOnce(t, fx.remote, refOf("s1"), tt.want1...)
			requireOnce(t, fx.remote, refOf("s2"), tt.want2...)
			rw := fx.take(follow.EventRewritten)
			require.Len(t, rw, tt.rewritten)
			for _, ev := range rw {
				require.Contains(t, ev.Message, "no longer hold")
				// Retention deletes a session the same way: say so.
				require.Contains(t, ev.Message, "or the session deleted?")
			}
		})
	}
}

// TestFollower_HeaderlessSessionRefilled: a session that holds some of the
// file's entries but no session header at all (lines an outbox uploaded
// after the bucket was emptied under it) is not a conflict: reconciling the
// file uploads the header and what the session lacks, each line once. A
// session holding another header stays refused.
func TestFollower_HeaderlessSessionRefilled(t *testing.T) {
	lines := []string{header("s1"), entry("e1", "", "hi"), entry("e2", "e1", "yo")}
	tests := []struct {
		name     string
		stored   []string
		want     []string
		conflict bool
	}{
		{
			name:   "no header held",
			stored: []string{entry("e2", "e1", "yo")},
			want:   []string{entry("e2", "e1", "yo"), header("s1"), entry("e1", "", "hi"), entry("e3", "e2", "more")},
		},
		{
			name:     "another header held",
			stored:   []string{header("x"), entry("e2", "e1", "yo")},
			want:     []string{header("x"), entry("e2", "e1", "yo")},
			conflict: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t)
			fx.write(fileA, lines...)
			require.NoError(t, fx.once())
			seg := make([][]byte, len(tt.stored))
			for i, s := range tt.stored {
				seg[i] = []byte(s)
			}
			fx.remote.segments[refOf("s1")] = [][][]byte{seg}
			fx.appendRaw(fileA, entry("e3", "e2", "more")+"\n")
			fx.state = t.TempDir() // a new state: the file is reconciled
			err := fx.once()
			if tt.conflict {
				require.ErrorIs(t, err, follow.ErrStuck)
				require.Len(t, fx.take(follow.EventConflict), 1)
			} else {
				require.NoError(t, err)
				require.Empty(t, fx.take(follow.EventConflict))
			}
			requireOnce(t, fx.remote, refOf("s1"), tt.want...)
		})
	}
}

// wipe forgets the stored segments of refs, as a retention policy deletes
// sessions, or of every session and the followers' markers when none is named,
// as a bucket emptied under the follower: what is pending stays (the outbox
// outlives the bucket).
func (r *remote) wipe(refs ...transcript.TranscriptRef) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(refs) == 0 {
		r.segments = map[transcript.TranscriptRef][][][]byte{}
		r.markers = map[string][]byte{}
		return
	}
	for _, ref := range refs {
		delete(r.segments, ref)
	}
}

// TestFollower_StoreLostWhileUnanswering: lines handed over while the store
// cannot say whether it holds the session (its bucket gone, the uploader
// riding it out) land without a header when the bucket comes back empty: the
// next read that finds the store answering, in the same process or after a
// restart, reconciles and uploads the header and what the session lacks.
func TestFollower_StoreLostWhileUnanswering(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(map[bool]string{false: "same process", true: "after a restart"}[restart], func(t *testing.T) {
			fx := newFixture(t)
			now := time.Now()
			fx.tune = func(c *follow.Config) { c.Now = func() time.Time { return now } }
			fx.write(fileA, header("s1"), entry("e1", "", "hi"))
			fx.write(fileB, header("s2"), entry("f1", "", "hey"))
			f := fx.open()
			require.NoError(t, f.Once(t.Context()))
			fx.remote.wipe()
			fx.remote.checkFails = true
			fx.appendRaw(fileA, entry("e2", "e1", "yo")+"\n")
			require.NoError(t, f.Once(t.Context()))
			requireOnce(t, fx.remote, refOf("s1"), entry("e2", "e1", "yo"))

			// The store answers again: it is asked after a rescan interval.
			fx.remote.checkFails = false
			now = now.Add(follow.DefaultRescanInterval)
			fx.appendRaw(fileA, entry("e3", "e2", "more")+"\n")
			if restart {
				require.NoError(t, f.Close())
				f = fx.open()
			}
			require.NoError(t, f.Once(t.Context()))
			requireOnce(t, fx.remote, refOf("s1"), entry("e2", "e1", "yo"), header("s1"), entry("e1", "", "hi"), entry("e3", "e2", "more"))
			// Its store lost s1's start while it could not answer: the
			// follower asks about every file, and s2 comes back too (after a
			// restart, s1's reconcile finds its entries without a header).
			requireOnce(t, fx.remote, refOf("s2"), header("s2"), entry("f1", "", "hey"))
			rw := fx.take(follow.EventRewritten)
			require.Len(t, rw, 2)
			require.Empty(t, fx.take(follow.EventConflict))
		})
	}
}

// TestFollower_StoreLostIdleFile: a store emptied under the follower (its
// marker gone with the sessions) gets every session again, even those whose
// files do not grow: at once when another file's read finds its own session
// lost, and otherwise by Run's look for the marker each rescan interval.
// Sessions deleted on purpose (a retention policy), the marker kept, are not
// uploaded again while their files stay as they are, even when the store holds
// no session at all any more; and a follower whose marker is gone refills its
// sessions even when another follower refilled the bucket first.
func TestFollower_StoreLostIdleFile(t *testing.T) {
	s1 := []string{header("s1"), entry("e1", "", "hi")}
	s2 := []string{header("s2"), entry("f1", "", "hey")}
	t.Run("another file grows", func(t *testing.T) {
		fx := newFixture(t)
		fx.write(fileA, s1...)
		fx.write(fileB, s2...)
		require.NoError(t, fx.once())
		fx.remote.wipe()
		fx.appendRaw(fileA, entry("e2", "e1", "yo")+"\n")
		require.NoError(t, fx.once())
		requireOnce(t, fx.remote, refOf("s1"), append(append([]string{}, s1...), entry("e2", "e1", "yo"))...)
		requireOnce(t, fx.remote, refOf("s2"), s2...)
		require.True(t, fx.saw(follow.EventLost, "no longer holds this follower's marker"))
		require.Len(t, fx.take(follow.EventRewritten), 2)
	})
	t.Run("a session deleted on purpose while its file grows", func(t *testing.T) {
		fx := newFixture(t)
		fx.write(fileA, s1...)
		fx.write(fileB, s2...)
		require.NoError(t, fx.once())
		fx.remote.wipe(refOf("s1"), refOf("s2"))
		fx.appendRaw(fileA, entry("e2", "e1", "yo")+"\n")
		require.NoError(t, fx.once())
		requireOnce(t, fx.remote, refOf("s1"), append(append([]string{}, s1...), entry("e2", "e1", "yo"))...)
		require.Empty(t, fx.remote.all(refOf("s2")), "an idle session deleted on purpose stays deleted")
		require.False(t, fx.saw(follow.EventLost, ""))
		require.Len(t, fx.take(follow.EventRewritten), 1)
	})
	tests := []struct {
		name         string
		lose         func(r *remote)
		want1, want2 []string
		checks       int // MarkerExists calls to wait for
	}{
		{"no file grows", func(r *remote) { r.wipe() }, s1, s2, 1},
		{"a session deleted from a store holding others", func(r *remote) { r.wipe(refOf("s2")) }, s1, nil, 3},
		{"every session deleted, the marker kept", func(r *remote) { r.wipe(refOf("s1"), refOf("s2")) }, nil, nil, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t)
			fx.tune = func(c *follow.Config) { c.RescanInterval = 10 * time.Millisecond }
			fx.write(fileA, s1...)
			fx.write(fileB, s2...)
			require.NoError(t, fx.once())
			tt.lose(fx.remote)
			runUntil(t, fx, func() bool {
				fx.remote.mu.Lock()
				checks := fx.remote.markerChecks
				fx.remote.mu.Unlock()
				return checks >= tt.checks && slices.Equal(fx.remote.all(refOf("s1")), tt.want1) &&
					slices.Equal(fx.remote.all(refOf("s2")), tt.want2)
			})
			requireOnce(t, fx.remote, refOf("s1"), tt.want1...)
			requireOnce(t, fx.remote, refOf("s2"), tt.want2...)
		})
	}
	t.Run("two followers, one bucket", func(t *testing.T) {
		fxA, fxB := newFixture(t), newFixture(t)
		fxA.tune = func(c *follow.Config) { c.RescanInterval = 10 * time.Millisecond }
		fxB.tune = fxA.tune
		fxB.remote = fxA.remote
		fxA.write(fileA, s1...)
		fxB.write(fileB, s2...)
		require.NoError(t, fxA.once())
		require.NoError(t, fxB.once())
		fxA.remote.wipe()
		// A refills the bucket first: the store holds a session again, but
		// not B's marker.
		runUntil(t, fxA, func() bool { return slices.Equal(fxA.remote.all(refOf("s1")), s1) })
		runUntil(t, fxB, func() bool { return slices.Equal(fxB.remote.all(refOf("s2")), s2) })
		requireOnce(t, fxA.remote, refOf("s1"), s1...)
		requireOnce(t, fxA.remote, refOf("s2"), s2...)
	})
}

// TestFollower_StoreLostAuditsOutliveARestart: the audits a lost marker
// starts are in the state file before the marker is put back, so a follower
// that stops before it could ask about each file (here: the store does not
// say whether it holds the sessions) asks after its restart, though the
// store holds its marker again by then.
func TestFollower_StoreLostAuditsOutliveARestart(t *testing.T) {
	s1 := []string{header("s1"), entry("e1", "", "hi")}
	s2 := []string{header("s2"), entry("f1", "", "hey")}
	fx := newFixture(t)
	fx.write(fileA, s1...)
	fx.write(fileB, s2...)
	require.NoError(t, fx.once())
	fx.remote.wipe()
	fx.remote.existsFails = true
	require.NoError(t, fx.once())
	require.Empty(t, fx.remote.all(refOf("s1")))
	fx.remote.mu.Lock()
	require.Len(t, fx.remote.markers, 1, "the marker is back")
	fx.remote.mu.Unlock()

	fx.remote.existsFails = false
	require.NoError(t, fx.once())
	requireOnce(t, fx.remote, refOf("s1"), s1...)
	requireOnce(t, fx.remote, refOf("s2"), s2...)
}

// runUntil runs a follower on fx until cond holds (at most 10 s).
func runUntil(t *testing.T, fx *fixture, cond func() bool) {
	t.Helper()
	f := fx.open()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	require.Eventually(t, cond, 10*time.Second, 5*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
	require.NoError(t, f.Close())
}

// TestFollower_StoreLostOutboxLandsHeaderless: the uploader holding a later
// line of a session when the bucket is emptied uploads it after the wipe, so
// the store holds that line without a header, and looks like a store holding
// a session, not an empty one. The next read of the file finds the session
// lost (no header) and uploads the header and what the session lacks; the
// store lost every other session then too, and an idle file's session comes
// back with it.
func TestFollower_StoreLostOutboxLandsHeaderless(t *testing.T) {
	fx := newFixture(t)
	fx.remote.direct = false
	fx.write(fileA, header("s1"), entry("e1", "", "hi"))
	fx.write(fileB, header("s2"), entry("f1", "", "hey"))
	require.NoError(t, fx.once())
	fx.remote.flush()
	fx.appendRaw(fileA, entry("e2", "e1", "yo")+"\n")
	require.NoError(t, fx.once()) // e2 waits in the uploader
	fx.remote.wipe()
	fx.remote.flush() // and lands in the emptied store
	requireOnce(t, fx.remote, refOf("s1"), entry("e2", "e1", "yo"))
	fx.appendRaw(fileA, entry("e3", "e2", "more")+"\n")
	require.NoError(t, fx.once())
	fx.remote.flush()
	requireOnce(t, fx.remote, refOf("s1"), entry("e2", "e1", "yo"), header("s1"), entry("e1", "", "hi"), entry("e3", "e2", "more"))
	requireOnce(t, fx.remote, refOf("s2"), header("s2"), entry("f1", "", "hey"))
	require.Len(t, fx.take(follow.EventRewritten), 2)
	require.Empty(t, fx.take(follow.EventConflict))
}

// TestFollower_StoreEmptiedMarkerFirst: an emptying takes time (a purge of a
// big bucket deletes objects for minutes, in key order, and .followers sorts
// before every agent id that starts with a letter or a digit), so the follower
// may find its marker gone while the store still holds its sessions, ask about
// each file, find it held, put the marker back, and only then see the purge
// delete the sessions. For a while after a loss each look for the marker
// (every rescan, each cron run) asks about every file again, so those sessions
// come back too; once that while is over, a session deleted on purpose stays
// deleted.
func TestFollower_StoreEmptiedMarkerFirst(t *testing.T) {
	s1 := []string{header("s1"), entry("e1", "", "hi")}
	s2 := []string{header("s2"), entry("f1", "", "hey")}
	for _, cron := range []bool{false, true} {
		t.Run(map[bool]string{false: "one process", true: "a process per run (cron)"}[cron], func(t *testing.T) {
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

			// The purge deletes the marker first: the sessions are still there.
			fx.remote.mu.Lock()
			fx.remote.markers = map[string][]byte{}
			fx.remote.mu.Unlock()
			run()
			require.Len(t, fx.take(follow.EventLost), 1)
			require.Empty(t, fx.take(follow.EventRewritten))

			// Then the sessions, after the marker was put back.
			fx.remote.wipe(refOf("s1"), refOf("s2"))
			now = now.Add(follow.DefaultRescanInterval)
			run()
			requireOnce(t, fx.remote, refOf("s1"), s1...)
			requireOnce(t, fx.remote, refOf("s2"), s2...)
			require.False(t, fx.saw(follow.EventLost, ""), "one loss, one lost event")
			require.Len(t, fx.take(follow.EventRewritten), 2)

			// The files are asked about again now and then, not at every
			// rescan: a handful of times each over the while after a loss.
			fx.remote.mu.Lock()
			fx.remote.existsChecks = 0
			fx.remote.mu.Unlock()
			for range 60 {
				now = now.Add(follow.DefaultRescanInterval)
				run()
			}
			fx.remote.mu.Lock()
			require.Less(t, fx.remote.existsChecks, 2*8)
			fx.remote.mu.Unlock()

			// Long after: retention's deletes are left alone.
			now = now.Add(time.Hour)
			run()
			fx.remote.wipe(refOf("s1"))
			now = now.Add(follow.DefaultRescanInterval)
			run()
			require.Empty(t, fx.remote.all(refOf("s1")), "an idle session deleted on purpose stays deleted")
			requireOnce(t, fx.remote, refOf("s2"), s2...)
			require.Empty(t, fx.take(follow.EventRewritten))
		})
	}
}

// TestFollower_StoreLostWhileOutboxRetries: lines handed over while the store
// was down wait in the uploader (an outbox retrying); the store comes back
// empty, so the follower hands over the file's header and earlier lines
// after them. Until the uploader has uploaded both, it holds the session's
// header behind those later lines: the session is held, not lost again, and
// the header, which is the file's own, is no second one (no conflict, the
// file is not stuck). Each line lands once. An uploader that takes the later
// lines back (a follow.QueueDropper) gets them again with the refill, in the
// file's order.
func TestFollower_StoreLostWhileOutboxRetries(t *testing.T) {
	tests := []struct {
		name             string
		landed, takeBack bool
	}{
		{"nothing uploaded yet", false, false},
		{"the later lines uploaded", true, false},
		{"taken back", false, true},
		{"taken back, the refill uploaded", true, true},
	}
	for _, tt := range tests {
		landed := tt.landed
		t.Run(tt.name, func(t *testing.T) {
			fx := newFixture(t)
			fx.remote.keepQueued = !tt.takeBack
			now := time.Now()
			fx.tune = func(c *follow.Config) { c.Now = func() time.Time { return now } }
			fx.remote.direct = false
			fx.write(fileA, header("s1"), entry("e1", "", "hi"))
			f := fx.open()
			require.NoError(t, f.Once(t.Context()))
			fx.remote.flush()

			fx.remote.wipe()
			fx.remote.checkFails = true
			fx.appendRaw(fileA, entry("e2", "e1", "yo")+"\n")
			require.NoError(t, f.Once(t.Context()))

			fx.remote.checkFails = false
			now = now.Add(follow.DefaultRescanInterval)
			fx.appendRaw(fileA, entry("e3", "e2", "more")+"\n")
			require.NoError(t, f.Once(t.Context()))
			if landed {
				fx.remote.mu.Lock()
				ref := refOf("s1")
				fx.remote.segments[ref] = append(fx.remote.segments[ref], fx.remote.pending[ref][0])
				fx.remote.pending[ref] = fx.remote.pending[ref][1:]
				fx.remote.mu.Unlock()
			}

			fx.appendRaw(fileA, entry("e4", "e3", "again")+"\n")
			now = now.Add(follow.DefaultRescanInterval)
			require.NoError(t, f.Once(t.Context()))
			fx.remote.flush()
			require.False(t, fx.saw(follow.EventConflict, ""))
			require.Len(t, fx.take(follow.EventRewritten), 1, "the session is lost once")
			want := []string{entry("e2", "e1", "yo"), header("s1"), entry("e1", "", "hi"),
				entry("e3", "e2", "more"), entry("e4", "e3", "again")}
			if tt.takeBack {
				want = []string{header("s1"), entry("e1", "", "hi"), entry("e2", "e1", "yo"),
					entry("e3", "e2", "more"), entry("e4", "e3", "again")}
			}
			requireOnce(t, fx.remote, refOf("s1"), want...)

			// A new state reconciles the file against that session.
			require.NoError(t, f.Close())
			fx.state = t.TempDir()
			fx.appendRaw(fileA, entry("e5", "e4", "last")+"\n")
			require.NoError(t, fx.once())
			require.False(t, fx.saw(follow.EventConflict, ""))
			requireOnce(t, fx.remote, refOf("s1"), append(want, entry("e5", "e4", "last"))...)
		})
	}
}

// TestFollower_NamespaceChangedNoLoss: a follower started again with another
// --ns finds no marker of its own in that namespace, which says nothing of a
// store emptied: it puts one there without a "lost" event, and its files go
// to their new sessions (each reconciled, as a change of --ns does).
func TestFollower_NamespaceChangedNoLoss(t *testing.T) {
	fx := newFixture(t)
	fx.write(fileA, header("s1"), entry("e1", "", "hi"))
	require.NoError(t, fx.once())
	fx.tune = func(c *follow.Config) { c.Namespace = "other" }
	require.NoError(t, fx.once())
	require.False(t, fx.saw(follow.EventLost, ""), "no store was emptied")
	other := refOf("s1")
	other.Namespace = "other"
	requireOnce(t, fx.remote, other, header("s1"), entry("e1", "", "hi"))
	fx.remote.mu.Lock()
	require.Len(t, fx.remote.markers, 2, "one marker in each namespace")
	fx.remote.mu.Unlock()
}
