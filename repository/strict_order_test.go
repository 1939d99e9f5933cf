package repository_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// A handle brought up to date reads a compacted segment the head names whole
// when it lacks its compacted inputs, and a later compacted segment through the
// few level-0 inputs it lacks. The entries of those inputs keep the place of the
// compacted segment they stand for, after the older commits of the one read
// whole: the handle's order is the order a fresh open gives. (It once put them
// first, before older commits, and when the head entry came after them nothing
// noticed.)
func TestRepository_StrictRefreshOrdersInputsInTheirPlace(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, membucket.New())
	s, err := e.repo(alice).Create(ctx, repository.CreateOptions{ID: "order", Strict: true})
	require.NoError(t, err)
	reader, err := e.repo(alice).Open(ctx, "order")
	require.NoError(t, err)
	appendN := func(prefix string, n int) {
		for k := range n {
			id := fmt.Sprintf("%s%02d", prefix, k)
			require.NoError(t, s.AppendIf(ctx, s.Head(), msg(id, s.Head(), id)))
		}
	}
	compact := func(delay time.Duration) {
		_, err := e.store.Compact(ctx, s.Ref(), transcript.CompactOptions{MinSegments: 2, DeleteDelay: delay})
		require.NoError(t, err)
	}
	appendN("a", 10)
	compact(transcript.DeleteAtOnce) // L1 A
	appendN("b", 2)
	compact(transcript.DeleteAtOnce) // L1 B, then L1 A+B: L2 X, whose inputs are compacted
	appendN("c", 2)
	compact(time.Hour) // L1 Y of c00, c01, which stay readable
	appendN("d", 1)    // after Y, so the head entry alone cannot tell a wrong order
	h, err := e.store.ReadHead(ctx, s.Ref())
	require.NoError(t, err)
	require.Len(t, h.Segments, 3, "the head names X, Y and d00's segment")

	require.NoError(t, reader.Refresh(ctx))
	got, err := reader.Entries(ctx)
	require.NoError(t, err)
	fresh, err := e.repo(alice).Open(ctx, "order")
	require.NoError(t, err)
	want, err := fresh.Entries(ctx)
	require.NoError(t, err)
	require.Equal(t, ids(want), ids(got))
	require.Equal(t, []string{"b01", "c00", "c01", "d00"}, ids(got)[len(got)-4:])
}
