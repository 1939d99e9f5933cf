package follow_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/follow"
)

// eventually waits (up to 10 s) until cond holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFollower_Run: Run finds a root that appears after it started, new
// folders and files (by the watch, or by the rescan alone), uploads each burst
// as a segment, and when its context ends hands over what is complete and
// returns nil.
func TestFollower_Run(t *testing.T) {
	for _, noWatch := range []bool{false, true} {
		t.Run(map[bool]string{false: "watch", true: "rescan only"}[noWatch], func(t *testing.T) {
			fx := newFixture(t)
			fx.tune = func(c *follow.Config) {
				c.NoWatch = noWatch
				c.RescanInterval = 50 * time.Millisecond
			}
			f := fx.open()
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() { done <- f.Run(ctx) }()
			eventually(t, "a missing root reported", func() bool { return fx.saw(follow.EventError, "waiting for it") })

			fx.write(fileA, header("s1"), entry("e1", "", "hi"))
			eventually(t, "the first burst", func() bool { return len(fx.remote.all(refOf("s1"))) == 2 })
			fx.appendRaw(fileA, entry("e2", "e1", "yo")+"\n")
			fx.appendRaw(fileA, entry("e3", "e2", "x")+"\n")
			eventually(t, "the second burst", func() bool { return len(fx.remote.all(refOf("s1"))) == 4 })

			fx.appendRaw(fileA, entry("e4", "e3", "last")+"\n")
			cancel()
			require.NoError(t, <-done)
			requireOnce(t, fx.remote, refOf("s1"), header("s1"), entry("e1", "", "hi"), entry("e2", "e1", "yo"),
				entry("e3", "e2", "x"), entry("e4", "e3", "last"))
			require.LessOrEqual(t, fx.remote.segmentCount(refOf("s1")), 4)
		})
	}
}

// TestFollower_Stuck: a file that ends in an unterminated line for StuckAfter
// is reported stuck, in Status and in the metrics, until its newline comes.
func TestFollower_Stuck(t *testing.T) {
	fx := newFixture(t)
	now := time.Now()
	fx.tune = func(c *follow.Config) {
		c.StuckAfter = time.Minute
		c.Now = func() time.Time { return now }
	}
	f := fx.open()
	fx.write(fileA, header("s1"))
	fx.appendRaw(fileA, `{"type":"mess`)
	require.NoError(t, f.Once(t.Context()))
	require.Empty(t, f.Status().Stuck)
	require.Equal(t, int64(13), f.Status().LagBytes)

	now = now.Add(2 * time.Minute)
	require.ErrorIs(t, f.Once(t.Context()), follow.ErrStuck)
	st := f.Status()
	require.Len(t, st.Stuck, 1)
	require.Contains(t, st.Stuck[0].Reason, "unterminated line at offset")
	require.Len(t, fx.take(follow.EventStuck), 1)

	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(f.Collector()))
	n, err := testutil.GatherAndCount(reg, "transcript_follow_stuck_files", "transcript_follow_stuck_file",
		"transcript_follow_lines_total", "transcript_follow_files", "transcript_follow_lag_bytes")
	require.NoError(t, err)
	require.Equal(t, 1+1+1+4+1, n)
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP transcript_follow_stuck_files Files that do not advance (see transcript_follow_stuck_file).
# TYPE transcript_follow_stuck_files gauge
transcript_follow_stuck_files 1
`), "transcript_follow_stuck_files"))

	fx.appendRaw(fileA, `"}`+"\n")
	require.NoError(t, f.Once(t.Context()))
	require.Empty(t, f.Status().Stuck)
}

// TestFollower_StateDirInRoot: a state directory inside the root is not
// followed.
func TestFollower_StateDirInRoot(t *testing.T) {
	fx := newFixture(t)
	fx.state = filepath.Join(fx.root, "state")
	fx.write(fileA, header("s1"))
	require.NoError(t, os.MkdirAll(fx.state, 0o755))
	require.NoError(t, fx.once())
	require.NoError(t, fx.once())
	require.Empty(t, fx.take(follow.EventIgnored))
	requireOnce(t, fx.remote, refOf("s1"), header("s1"))
}
