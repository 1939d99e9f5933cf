package repository

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// beforeList runs a hook once, before the next listing under key prefix
// "under".
type beforeList struct {
	bucket.Bucket
	under string
	hook  atomic.Pointer[func()]
}

func (b *beforeList) List(ctx context.Context, opts bucket.ListOptions, fn func(bucket.ObjectInfo) error) error {
	if strings.HasPrefix(opts.Prefix, b.under) {
		if f := b.hook.Swap(nil); f != nil {
			(*f)()
		}
	}
	return b.Bucket.List(ctx, opts, fn)
}

// newAliceRepo returns a store over b and the repository of owner acme/alice on
// it, both closed when the test ends.
func newAliceRepo(t *testing.T, b bucket.Bucket) (*transcript.Store, *Repository) {
	t.Helper()
	store, err := transcript.New(transcript.Config{Bucket: b})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	repos, err := NewService(store, Config{})
	require.NoError(t, err)
	repo, err := repos.Repository(Owner{Tenant: "acme", User: "alice"})
	require.NoError(t, err)
	t.Cleanup(func() { repo.Close() })
	return store, repo
}

// TestStrictCreateSeenHalfWay: a strict create writes the session's first
// segment, then its head. A handle loaded between the two must not go on
// taking the session for a default-mode one, whose appends no head would ever
// commit (the compaction job deletes such segments as uncommitted): a load
// whose listing shows the head reads the session as strict, and a handle
// loaded before the head existed turns strict at its next whole listing, which
// every append makes, so an append through it is checked against the head and
// writes no segment that stays uncommitted.
func TestStrictCreateSeenHalfWay(t *testing.T) {
	ctx := context.Background()
	header := []byte(`{"type":"session","version":3,"id":"s","timestamp":"2026-03-01T12:00:00.000Z","cwd":"/w"}`)
	setup := func(t *testing.T) (*beforeList, *transcript.Store, *Repository, transcript.TranscriptRef, func()) {
		b := &beforeList{Bucket: membucket.New()}
		store, repo := newAliceRepo(t, b)
		ref := transcript.TranscriptRef{Namespace: repo.Namespace(), AgentID: DefaultAgentID, SessionID: "s"}
		b.under = store.SessionPrefix(ref)
		w, err := transcript.NewWriter("creator")
		require.NoError(t, err)
		// The create's first half: its segment, not yet its head.
		info, err := store.AppendSegment(ctx, ref, [][]byte{header}, w)
		require.NoError(t, err)
		commit := func() {
			_, err := store.WriteHead(ctx, ref, transcript.Head{}, transcript.Head{}.Commit(info.Key, "", &transcript.Summary{Cwd: "/w"}))
			require.NoError(t, err)
		}
		return b, store, repo, ref, commit
	}

	t.Run("head lands during the load", func(t *testing.T) {
		b, _, repo, _, commit := setup(t)
		b.hook.Store(&commit)
		s, err := repo.Open(ctx, "s")
		require.NoError(t, err)
		require.Nil(t, b.hook.Load(), "the head was written after the load read it, before it listed")
		require.True(t, s.Strict())
		err = s.AppendOwned(ctx, "bogus", [][]byte{[]byte(`{"type":"custom","id":"e1","parentId":null,"customType":"x"}`)})
		require.ErrorIs(t, err, ErrStaleHead, "a strict session checks the expected head")
	})

	t.Run("head lands after the load", func(t *testing.T) {
		_, _, repo, _, commit := setup(t)
		s, err := repo.Open(ctx, "s")
		require.NoError(t, err)
		require.False(t, s.Strict(), "no head yet: a default-mode session as far as anyone can tell")
		commit()
		require.NoError(t, s.Refresh(ctx), "a session of one segment is listed whole at once")
		require.True(t, s.Strict())
	})

	t.Run("head lands after the load of a longer session", func(t *testing.T) {
		_, store, repo, ref, commit := setup(t)
		w, err := transcript.NewWriter("other")
		require.NoError(t, err)
		_, err = store.AppendSegment(ctx, ref, [][]byte{[]byte(`{"type":"custom","id":"c1","parentId":null,"customType":"x"}`)}, w)
		require.NoError(t, err)
		s, err := repo.Open(ctx, "s")
		require.NoError(t, err)
		require.False(t, s.Strict())
		commit()
		s.mu.Lock()
		s.fullAt = s.fullAt.Add(-RefreshListing) // its next refresh lists the session whole
		s.mu.Unlock()
		require.NoError(t, s.Refresh(ctx))
		require.True(t, s.Strict())
	})

	t.Run("append through a handle loaded before the head", func(t *testing.T) {
		_, store, repo, ref, commit := setup(t)
		s, err := repo.Open(ctx, "s")
		require.NoError(t, err)
		require.False(t, s.Strict())
		commit()
		e1 := []byte(`{"type":"custom","id":"e1","parentId":null,"customType":"x"}`)
		err = s.AppendOwned(ctx, "bogus", [][]byte{e1})
		require.ErrorIs(t, err, ErrStaleHead)
		require.True(t, s.Strict())
		infos, err := store.ListSegments(ctx, ref)
		require.NoError(t, err)
		require.Len(t, infos, 1, "the refused append wrote nothing")
		require.NoError(t, s.AppendOwned(ctx, "", [][]byte{e1}), "against the committed head it is taken")
		hs, err := store.ReadHead(ctx, ref)
		require.NoError(t, err)
		require.Equal(t, "e1", hs.Entry, "and committed")
	})
}

// TestSegmentsWithoutHeaderAreNoSession: what appends racing a session's
// deletion leave behind (segments of entries without the session's header) is
// not a session: it opens as not found (so no handle appends to it) and a list
// leaves it out, so that no append brings a deleted session back.
func TestSegmentsWithoutHeaderAreNoSession(t *testing.T) {
	ctx := context.Background()
	store, repo := newAliceRepo(t, membucket.New())
	ref := transcript.TranscriptRef{Namespace: repo.Namespace(), AgentID: DefaultAgentID, SessionID: "gone"}
	w, err := transcript.NewWriter("late")
	require.NoError(t, err)
	_, err = store.AppendSegment(ctx, ref, [][]byte{[]byte(`{"type":"message","id":"w1","parentId":"root","message":{"role":"user","content":"x"}}`)}, w)
	require.NoError(t, err)

	_, err = repo.Open(ctx, "gone")
	require.ErrorIs(t, err, bucket.ErrNotFound)
	list, err := repo.ListPage(ctx, ListOptions{})
	require.NoError(t, err)
	require.Empty(t, list.Sessions)

	// The same with its header is a session.
	_, err = store.AppendSegment(ctx, ref, [][]byte{[]byte(`{"type":"session","version":3,"id":"gone","timestamp":"2026-03-01T12:00:00.000Z","cwd":"/w"}`)}, w)
	require.NoError(t, err)
	s, err := repo.Open(ctx, "gone")
	require.NoError(t, err)
	require.Equal(t, "/w", s.Header().Cwd())
}

// TestListPage_DamagedHead: a strict session whose head object does not parse
// is listed by its id alone; the owner's other sessions are listed as ever,
// rather than the whole list failing. Opening it says what is wrong.
func TestListPage_DamagedHead(t *testing.T) {
	ctx := context.Background()
	store, repo := newAliceRepo(t, membucket.New())
	for _, id := range []string{"bad", "good"} {
		_, err := repo.Create(ctx, CreateOptions{ID: id, Cwd: "/w", Strict: true})
		require.NoError(t, err)
	}
	ref := transcript.TranscriptRef{Namespace: repo.Namespace(), AgentID: DefaultAgentID, SessionID: "bad"}
	garbage := []byte("{garbage")
	require.NoError(t, store.Bucket().Replace(ctx, store.SessionPrefix(ref)+transcript.HeadName, bytes.NewReader(garbage), int64(len(garbage)), bucket.PutOptions{}))

	page, err := repo.ListPage(ctx, ListOptions{})
	require.NoError(t, err)
	require.Len(t, page.Sessions, 2)
	require.Equal(t, SessionInfo{ID: "bad", Strict: true}, page.Sessions[0])
	require.Equal(t, "/w", page.Sessions[1].Cwd)

	_, err = repo.Open(ctx, "bad")
	require.ErrorIs(t, err, ErrHeadMismatch)
	require.ErrorIs(t, err, transcript.ErrInvalidHead)
}

// TestAppendIf_StaleHeadBeforeUnknownParent: an append whose expected head is
// not the committed one is refused as stale (the writer can read the session
// again and retry) even when its entries name a parent the session lacks, as
// after the session was deleted and created again; with the committed head as
// expected, the unknown parent is what is refused.
func TestAppendIf_StaleHeadBeforeUnknownParent(t *testing.T) {
	ctx := context.Background()
	_, repo := newAliceRepo(t, membucket.New())
	s, err := repo.Create(ctx, CreateOptions{ID: "s", Strict: true})
	require.NoError(t, err)
	require.NoError(t, s.Append(ctx, []byte(`{"type":"custom","id":"a","parentId":null,"customType":"x"}`)))

	orphan := []byte(`{"type":"custom","id":"x","parentId":"old","customType":"x"}`)
	err = s.AppendIf(ctx, "old", orphan)
	require.ErrorIs(t, err, ErrStaleHead)

	err = s.AppendIf(ctx, "a", orphan)
	var ee *EntryError
	require.ErrorAs(t, err, &ee)
	require.Equal(t, "old", ee.RefersTo)
	require.NotErrorIs(t, err, ErrStaleHead)
}
