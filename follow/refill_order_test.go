package follow_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/follow"
)

// TestFollower_RefillInFileOrder: lines handed over before the store was
// emptied, and still waiting in the uploader when the follower finds the
// session lost, are taken back and handed over again with the refill, so that
// the session holds the file's lines in the file's order (header first), each
// once: left in the uploader, they would land ahead of the refill's header.
// A crash (here: the refill's hand-over failing, then a new process) after
// they were taken back loses none of them.
func TestFollower_RefillInFileOrder(t *testing.T) {
	for _, failRefill := range []bool{false, true} {
		t.Run(map[bool]string{false: "refilled", true: "refill fails, then a restart"}[failRefill], func(t *testing.T) {
			fx := newFixture(t)
			fx.write(fileA, header("s1"), entry("e1", "", "hi"))
			require.NoError(t, fx.once())
			fx.remote.direct = false // the outbox holds what is handed over from now on
			fx.appendRaw(fileA, entry("e2", "e1", "yo")+"\n")
			fx.appendRaw(fileA, entry("e3", "e2", "hey")+"\n")
			require.NoError(t, fx.once())
			fx.remote.wipe()
			fx.appendRaw(fileA, entry("e4", "e3", "later")+"\n")
			if failRefill {
				fx.remote.failNext = 1
				require.ErrorIs(t, fx.once(), follow.ErrStuck)
			}
			require.NoError(t, fx.once())
			fx.remote.flush()
			requireOnce(t, fx.remote, refOf("s1"), header("s1"), entry("e1", "", "hi"), entry("e2", "e1", "yo"),
				entry("e3", "e2", "hey"), entry("e4", "e3", "later"))
			require.Positive(t, fx.remote.drops)
			require.Empty(t, fx.take(follow.EventConflict))
		})
	}
}

// TestFollower_RefillOfASharedSession: two files of one session (a copy of
// a session file beside it) take nothing back from the uploader for a
// refill, as the lines waiting there may be the other file's: every line of
// both lands.
func TestFollower_RefillOfASharedSession(t *testing.T) {
	fx := newFixture(t)
	copyOfA := piFolder + "/copy.jsonl"
	fx.write(fileA, header("s1"), entry("e1", "", "hi"))
	fx.write(copyOfA, header("s1"), entry("e1", "", "hi"))
	require.NoError(t, fx.once())
	fx.remote.direct = false
	fx.appendRaw(copyOfA, entry("c2", "e1", "copy")+"\n")
	require.NoError(t, fx.once())
	fx.remote.wipe()
	fx.appendRaw(fileA, entry("e2", "e1", "yo")+"\n")
	require.NoError(t, fx.once())
	fx.remote.flush()
	got := fx.remote.all(refOf("s1"))
	for _, line := range []string{header("s1"), entry("e1", "", "hi"), entry("c2", "e1", "copy"), entry("e2", "e1", "yo")} {
		require.Contains(t, got, line)
	}
	require.Zero(t, fx.remote.drops)
}
