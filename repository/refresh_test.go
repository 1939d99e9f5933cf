package repository_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// pageIDs returns the ids of the whole sequence as s holds it.
func pageIDs(s *repository.Session) []string {
	p := s.Page(0, 1<<30)
	return ids(p.Entries)
}

// TestRefreshExtendsTheSequence: a handle that did not write the entries of
// another handle sees them after Refresh, at the end of its sequence, in the
// order a fresh Open gives; pages slice that sequence; the epoch does not move.
func TestRefreshExtendsTheSequence(t *testing.T) {
	for _, strict := range []bool{true, false} {
		t.Run(map[bool]string{true: "strict", false: "default"}[strict], func(t *testing.T) {
			e := newEnv(t, membucket.New())
			a, b := e.repo(alice), e.repo(alice)
			sa, err := a.Create(t.Context(), repository.CreateOptions{ID: "s", Cwd: "/w", Strict: strict})
			require.NoError(t, err)
			sb, err := b.Open(t.Context(), "s")
			require.NoError(t, err)
			epoch := sa.Page(0, 0).Epoch
			parent := ""
			for i, id := range []string{"m1", "m2", "m3", "m4"} {
				writer := sa
				if i%2 == 1 {
					writer = sb
				}
				require.NoError(t, writer.Refresh(t.Context()))
				require.NoError(t, writer.Append(t.Context(), msg(id, parent, id)))
				parent = id
			}
			require.NoError(t, sa.Refresh(t.Context()))
			fresh, err := a.Open(t.Context(), "s")
			require.NoError(t, err)
			require.Equal(t, []string{"m1", "m2", "m3", "m4"}, pageIDs(sa))
			require.Equal(t, pageIDs(fresh), pageIDs(sa))
			require.Equal(t, epoch, sa.Page(0, 0).Epoch)
			p := sa.Page(1, 2)
			require.Equal(t, []string{"m2", "m3"}, ids(p.Entries))
			require.Equal(t, 4, p.Count)
			require.Equal(t, "m4", p.Head)
			require.Empty(t, sa.Page(9, 2).Entries)
			info := sa.Snapshot()
			require.Equal(t, "/w", info.Cwd)
			require.Equal(t, 4, info.Entries)
			require.Equal(t, strict, info.Strict)
		})
	}
}

// TestRefreshStrictIsCommitOrder: a strict session's sequence is its commit
// order, also where the merge order differs (a writer whose clock is behind
// commits after a writer whose clock is ahead).
func TestRefreshStrictIsCommitOrder(t *testing.T) {
	e := newEnv(t, membucket.New())
	ahead, behind := e.repo(alice), e.repo(alice)
	s1, err := ahead.Create(t.Context(), repository.CreateOptions{ID: "s", Strict: true})
	require.NoError(t, err)
	require.NoError(t, s1.AppendIf(t.Context(), "", msg("m1", "", "first")))
	s2, err := behind.Open(t.Context(), "s")
	require.NoError(t, err)
	e.clock.Advance(-time.Hour) // the next keys sort before m1's
	require.NoError(t, s2.AppendIf(t.Context(), "m1", msg("m2", "m1", "second")))
	require.NoError(t, s1.Refresh(t.Context()))
	require.Equal(t, []string{"m1", "m2"}, pageIDs(s1))
	reopened, err := ahead.Open(t.Context(), "s")
	require.NoError(t, err)
	require.Equal(t, []string{"m1", "m2"}, pageIDs(reopened))
	require.Equal(t, "m2", reopened.Page(0, 0).Head)
}

// TestRefreshLateSegmentChangesEpoch: in default mode a segment whose entries
// sort before those a handle holds makes the handle read the session whole: its
// sequence is then the merge order a fresh Open gives, and its epoch changes.
func TestRefreshLateSegmentChangesEpoch(t *testing.T) {
	b := membucket.New()
	e := newEnv(t, b)
	a := e.repo(alice)
	sa, err := a.Create(t.Context(), repository.CreateOptions{ID: "s"})
	require.NoError(t, err)
	require.NoError(t, sa.Append(t.Context(), msg("m1", "", "one")))
	epoch := sa.Page(0, 0).Epoch
	// A writer that did not read the session (an outbox, a SessionTree) and whose
	// clock is behind stores a segment whose key sorts before m1's.
	lateStore, err := transcript.New(transcript.Config{Bucket: b, Prefix: "data", Now: e.clock.Now})
	require.NoError(t, err)
	e.clock.Advance(-time.Hour)
	_, err = lateStore.AppendSegment(t.Context(), sa.Ref(), [][]byte{msg("x1", "", "late")}, transcriptWriter(t, "late"))
	require.NoError(t, err)
	require.NoError(t, sa.Refresh(t.Context())) // the first refresh lists the session whole
	fresh, err := a.Open(t.Context(), "s")
	require.NoError(t, err)
	require.Equal(t, []string{"x1", "m1"}, pageIDs(fresh))
	require.Equal(t, pageIDs(fresh), pageIDs(sa))
	require.NotEqual(t, epoch, sa.Page(0, 0).Epoch)
}

// TestRefreshSessionGone: a session deleted through another handle is not found
// by Refresh.
func TestRefreshSessionGone(t *testing.T) {
	for _, strict := range []bool{true, false} {
		e := newEnv(t, membucket.New())
		a := e.repo(alice)
		s, err := a.Create(t.Context(), repository.CreateOptions{ID: "s", Strict: strict})
		require.NoError(t, err)
		require.NoError(t, e.repo(alice).Delete(t.Context(), "s"))
		require.ErrorIs(t, s.Refresh(t.Context()), bucket.ErrNotFound, "strict %v", strict)
	}
}

// TestForkSession: a fork takes the id asked for (taken: bucket.ErrExists), an
// empty fork keeps its parent, and an unknown entry is an EntryNotFoundError.
func TestForkSession(t *testing.T) {
	e := newEnv(t, membucket.New())
	r := e.repo(alice)
	src, err := r.Create(t.Context(), repository.CreateOptions{ID: "src", Cwd: "/w", Strict: true})
	require.NoError(t, err)
	require.NoError(t, src.AppendIf(t.Context(), "", msg("m1", "", "one")))
	require.NoError(t, src.AppendIf(t.Context(), "m1", msg("m2", "m1", "two")))

	f, err := r.ForkSession(t.Context(), src, repository.ForkOptions{ID: "f1", At: "m1"})
	require.NoError(t, err)
	require.Equal(t, "f1", f.ID())
	require.Equal(t, []string{"m1"}, pageIDs(f))
	require.Equal(t, "src", f.Header().ParentSession())
	require.True(t, f.Strict())

	_, err = r.ForkSession(t.Context(), src, repository.ForkOptions{ID: "f1", At: "m2"})
	require.ErrorIs(t, err, bucket.ErrExists)

	empty, err := r.ForkSession(t.Context(), src, repository.ForkOptions{ID: "f2", Cwd: "/other"})
	require.NoError(t, err)
	reopened, err := r.Open(t.Context(), "f2")
	require.NoError(t, err)
	require.Empty(t, pageIDs(reopened))
	require.Equal(t, "src", reopened.Header().ParentSession())
	require.Equal(t, "/other", reopened.Header().Cwd())
	require.Empty(t, empty.Head())

	_, err = r.ForkSession(t.Context(), src, repository.ForkOptions{At: "ghost"})
	var enf *repository.EntryNotFoundError
	require.True(t, errors.As(err, &enf), "%v", err)
	require.Equal(t, "ghost", enf.Entry)
	require.ErrorIs(t, err, bucket.ErrNotFound)
}

// TestListPage pages an owner's sessions in id order with a cursor, filters by
// cwd and reports it.
func TestListPage(t *testing.T) {
	e := newEnv(t, membucket.New())
	r := e.repo(alice)
	for _, c := range []struct{ id, cwd string }{{"a", "/x"}, {"b", "/y"}, {"c", "/x"}, {"d", "/x"}, {"e", "/y"}} {
		_, err := r.Create(t.Context(), repository.CreateOptions{ID: c.id, Cwd: c.cwd})
		require.NoError(t, err)
	}
	var got []string
	var cursor string
	for range 10 {
		p, err := r.ListPage(t.Context(), repository.ListOptions{Cwd: "/x", After: cursor, Limit: 2})
		require.NoError(t, err)
		for _, s := range p.Sessions {
			require.Equal(t, "/x", s.Cwd)
			got = append(got, s.ID)
		}
		if p.Next == "" {
			break
		}
		cursor = p.Next
	}
	require.Equal(t, []string{"a", "c", "d"}, got)
	all, err := r.ListPage(t.Context(), repository.ListOptions{})
	require.NoError(t, err)
	require.Len(t, all.Sessions, 5)
	require.Empty(t, all.Next)
}

// TestRefreshStrictCompactedKeepsSequence: a compaction changes the segments a
// strict head names, not its entries. A handle's Refresh after it keeps the
// sequence and its epoch and reads no segment (the head, and the compacted
// segment's metadata frame, which names inputs the handle holds); an append
// after it extends the sequence.
func TestRefreshStrictCompactedKeepsSequence(t *testing.T) {
	cb := newCountingBucket(membucket.New())
	e := newEnv(t, cb)
	ctx := t.Context()
	s, err := e.repo(alice).Create(ctx, repository.CreateOptions{ID: "s", Strict: true})
	require.NoError(t, err)
	want, err := appendChain(ctx, s, "m", 10)
	require.NoError(t, err)
	reader, err := e.repo(alice).Open(ctx, "s")
	require.NoError(t, err)
	before := reader.Page(0, 100)
	require.Equal(t, want, ids(before.Entries))

	res, err := e.store.Compact(ctx, s.Ref(), transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
	require.NoError(t, err)
	require.NotEmpty(t, res.Compactions, "the session was compacted")
	cb.take()
	require.NoError(t, reader.Refresh(ctx))
	n := cb.take()
	require.Zero(t, n["list"], "a strict refresh does not list")
	require.LessOrEqual(t, n["get"], 1+len(res.Compactions), "the head and the metadata of each compacted segment: %v", n)
	after := reader.Page(0, 100)
	require.Equal(t, before.Epoch, after.Epoch)
	require.Equal(t, want, ids(after.Entries))

	head := s.Head()
	require.NoError(t, s.AppendIf(ctx, head, msg("n1", head, "after")))
	require.NoError(t, reader.Refresh(ctx))
	require.Equal(t, append(want, "n1"), pageIDs(reader))
	require.Equal(t, before.Epoch, reader.Page(0, 0).Epoch)
	reopened, err := e.repo(alice).Open(ctx, "s")
	require.NoError(t, err)
	require.Equal(t, pageIDs(reader), pageIDs(reopened))
}
