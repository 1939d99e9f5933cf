package repository_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// TestRepository is the conformance suite of the repository: every case runs over
// memory, a local directory and MinIO.
func TestRepository(t *testing.T) {
	cases := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"CreateOpenList", testCreateOpenList},
		{"OwnershipIsolation", testOwnershipIsolation},
		{"IdempotentAppend", testIdempotentAppend},
		{"StrictIdempotentAppend", testStrictIdempotentAppend},
		{"StrictRaceHandles", testStrictRaceHandles},
		{"StrictRaceOneHandle", testStrictRaceOneHandle},
		{"StrictLeafMovesHead", testStrictLeafMovesHead},
		{"StrictHeadMismatch", testStrictHeadMismatch},
		{"StrictIgnoresUncommitted", testStrictIgnoresUncommitted},
		{"CreateExisting", testCreateExisting},
		{"ForkThenAppendBoth", testForkThenAppendBoth},
		{"DeleteThenOpen", testDeleteThenOpen},
		{"WatchDefault", func(t *testing.T, e *env) { testWatch(t, e, false) }},
		{"WatchStrict", func(t *testing.T, e *env) { testWatch(t, e, true) }},
		{"RewindMatchesTruncatedFile", testRewind},
		{"OpenAsOf", testOpenAsOf},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) { c.fn(t, newEnv(t, b.new(t))) })
			}
		})
	}
}

func testCreateOpenList(t *testing.T, e *env) {
	ctx := t.Context()
	r := e.repo(alice)
	s1, err := r.Create(ctx, repository.CreateOptions{ID: "s1", Name: "First <chat>", Cwd: "/work"})
	require.NoError(t, err)
	require.NoError(t, s1.Append(ctx, msg("m1", "", "hello")))
	require.NoError(t, s1.Append(ctx, msg("m2", "m1", "again")))
	s2, err := r.Create(ctx, repository.CreateOptions{Strict: true})
	require.NoError(t, err)
	require.NoError(t, repository.ValidateID(s2.ID()), "generated id")
	require.NoError(t, s2.Append(ctx, msg("x1", "", "strict")))

	got, err := r.Open(ctx, "s1")
	require.NoError(t, err)
	require.False(t, got.Strict())
	h := got.Header()
	require.Equal(t, "s1", h.ID())
	require.Equal(t, 3, h.Version())
	require.Equal(t, "/work", h.Cwd())
	entries, err := got.Entries(ctx)
	require.NoError(t, err)
	require.Len(t, entries, 3) // session_info, m1, m2
	require.Equal(t, pi.TypeSessionInfo, entries[0].Type())
	require.Equal(t, []string{"m1", "m2"}, ids(entries[1:]))

	var buf bytes.Buffer
	require.NoError(t, got.Export(ctx, &buf))
	require.Contains(t, buf.String(), `"name":"First <chat>"`, "names are not HTML-escaped")
	ph, pe, _, err := sessiontree.ParseSession(&buf)
	require.NoError(t, err)
	require.Equal(t, "s1", ph.ID())
	require.Len(t, pe, 3)

	list, err := r.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 2)
	byID := map[string]repository.SessionInfo{}
	for _, info := range list {
		byID[info.ID] = info
	}
	i1 := byID["s1"]
	require.Equal(t, "First <chat>", i1.Name)
	require.Equal(t, 3, i1.Entries)
	require.Equal(t, "m2", i1.Leaf)
	require.False(t, i1.Strict)
	require.False(t, i1.Created.IsZero())
	require.True(t, i1.Updated.After(i1.Created), "updated %v, created %v", i1.Updated, i1.Created)
	i2 := byID[s2.ID()]
	require.True(t, i2.Strict)
	require.Equal(t, "x1", i2.Leaf)
	require.Equal(t, 1, i2.Entries)
}

func testOwnershipIsolation(t *testing.T, e *env) {
	ctx := t.Context()
	ra, rb := e.repo(alice), e.repo(bob)
	for _, strict := range []bool{false, true} {
		id := fmt.Sprintf("private-%v", strict)
		s, err := ra.Create(ctx, repository.CreateOptions{ID: id, Strict: strict})
		require.NoError(t, err)
		require.NoError(t, s.Append(ctx, msg("m1", "", "secret")))

		calls := map[string]func(r *repository.Repository, id string) error{
			"Open": func(r *repository.Repository, id string) error { _, err := r.Open(ctx, id); return err },
			"OpenAsOf": func(r *repository.Repository, id string) error {
				_, err := r.OpenAsOf(ctx, id, time.Now().Add(time.Hour))
				return err
			},
			"Fork":   func(r *repository.Repository, id string) error { _, err := r.Fork(ctx, id, "m1"); return err },
			"Delete": func(r *repository.Repository, id string) error { return r.Delete(ctx, id) },
			"CollectUncommitted": func(r *repository.Repository, id string) error {
				_, err := r.CollectUncommitted(ctx, id, 0)
				return err
			},
		}
		for name, call := range calls {
			foreign := call(rb, id)
			require.ErrorIs(t, foreign, bucket.ErrNotFound, "%s of a foreign session", name)
			missing := call(rb, "never-"+id)
			require.ErrorIs(t, missing, bucket.ErrNotFound, "%s of a missing session", name)
			require.Equal(t, strings.ReplaceAll(missing.Error(), "never-", ""), foreign.Error(),
				"%s: a foreign session must read exactly like a missing one", name)
			require.NotContains(t, strings.ToLower(foreign.Error()), "forbidden")
		}
		list, err := rb.List(ctx)
		require.NoError(t, err)
		require.Empty(t, list)
	}
	// Bob may use the same id: it is a different session, and Alice's is untouched.
	sb, err := rb.Create(ctx, repository.CreateOptions{ID: "private-false"})
	require.NoError(t, err)
	require.NoError(t, sb.Append(ctx, msg("m1", "", "bob's own")))
	sa, err := ra.Open(ctx, "private-false")
	require.NoError(t, err)
	entries, err := sa.Entries(ctx)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Contains(t, string(entries[0].Raw()), "secret")
}

func testIdempotentAppend(t *testing.T, e *env) {
	ctx := t.Context()
	r := e.repo(alice)
	s, err := r.Create(ctx, repository.CreateOptions{ID: "s"})
	require.NoError(t, err)
	prefix := sessionPrefix(s)
	require.NoError(t, s.Append(ctx, msg("m1", "", "hello")))
	n := len(keys(t, e.bucket, prefix))

	// A retry, by this handle and by another replica: success, nothing written.
	require.NoError(t, s.Append(ctx, msg("m1", "", "hello")))
	other, err := e.repo(alice).Open(ctx, "s")
	require.NoError(t, err)
	require.NoError(t, other.Append(ctx, msg("m1", "", "hello")))
	require.Len(t, keys(t, e.bucket, prefix), n)

	// Other bytes under an existing id: a conflict, nothing written, also in a batch.
	for _, batch := range [][][]byte{
		{msg("m1", "", "changed")},
		{msg("m2", "m1", "new"), msg("m1", "", "changed")},
		{msg("m3", "m1", "a"), msg("m3", "m1", "b")},
	} {
		err := other.Append(ctx, batch...)
		require.ErrorIs(t, err, transcript.ErrConflict)
		require.Len(t, keys(t, e.bucket, prefix), n)
	}
	// A batch mixing a retry with a new entry writes only the new one.
	require.NoError(t, other.Append(ctx, msg("m1", "", "hello"), msg("m2", "m1", "new")))
	require.Len(t, keys(t, e.bucket, prefix), n+1)
	entries, err := s.Entries(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"m1", "m2"}, ids(entries))

	// Invalid entries and unknown parents are refused.
	for _, bad := range [][]byte{[]byte(`{"type":"message"}`), []byte(`not json`), msg("m9", "nope", "orphan"),
		[]byte(`{"type":"session","id":"h","version":3}`)} {
		require.ErrorIs(t, s.Append(ctx, bad), repository.ErrInvalid, "%s", bad)
	}
}

func testStrictIdempotentAppend(t *testing.T, e *env) {
	ctx := t.Context()
	s, err := e.repo(alice).Create(ctx, repository.CreateOptions{ID: "s", Strict: true})
	require.NoError(t, err)
	require.NoError(t, s.AppendIf(ctx, "", msg("m1", "", "hello")))
	require.NoError(t, s.AppendIf(ctx, "m1", msg("m2", "m1", "more")))
	n := len(keys(t, e.bucket, sessionPrefix(s)))
	// A retry with the old expected head succeeds: idempotency comes first.
	require.NoError(t, s.AppendIf(ctx, "m1", msg("m2", "m1", "more")))
	require.ErrorIs(t, s.AppendIf(ctx, "m2", msg("m2", "m1", "other")), transcript.ErrConflict)
	require.Len(t, keys(t, e.bucket, sessionPrefix(s)), n)
	require.Equal(t, "m2", s.Head())
}

// raceAppends runs one append per goroutine at once and checks that exactly one
// succeeds and the others fail with a stale-head conflict. It returns the winner.
func raceAppends(t *testing.T, appends []func() error) int {
	t.Helper()
	errs := make([]error, len(appends))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, fn := range appends {
		wg.Go(func() {
			<-start
			errs[i] = fn()
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			require.Equal(t, -1, winner, "two winners: %d and %d", winner, i)
			winner = i
			continue
		}
		require.ErrorIs(t, err, transcript.ErrConflict, "loser %d", i)
		require.ErrorIs(t, err, repository.ErrStaleHead, "loser %d", i)
	}
	require.NotEqual(t, -1, winner, "no append won")
	return winner
}

// checkCommitted opens the session afresh and checks that it holds exactly want,
// that its head is the last of them, and that no uncommitted segment is left.
func checkCommitted(t *testing.T, e *env, id string, want []string) {
	t.Helper()
	ctx := t.Context()
	s, err := e.repo(alice).Open(ctx, id)
	require.NoError(t, err)
	require.NoError(t, s.Err())
	entries, err := s.Entries(ctx)
	require.NoError(t, err)
	require.Equal(t, want, ids(entries))
	require.Equal(t, want[len(want)-1], s.Head())
	segs, err := e.store.ListSegments(ctx, s.Ref())
	require.NoError(t, err)
	require.Len(t, segs, len(want)+1, "header segment plus one per committed append; nothing half-written")
}

func testStrictRaceHandles(t *testing.T, e *env) {
	ctx := t.Context()
	s, err := e.repo(alice).Create(ctx, repository.CreateOptions{ID: "race", Strict: true})
	require.NoError(t, err)
	require.NoError(t, s.Append(ctx, msg("root", "", "start")))
	const n = 6
	var appends []func() error
	for i := range n {
		h, err := e.repo(alice).Open(ctx, "race") // one replica each, all at head "root"
		require.NoError(t, err)
		appends = append(appends, func() error { return h.Append(ctx, msg(fmt.Sprintf("w%d", i), "root", "turn")) })
	}
	w := raceAppends(t, appends)
	checkCommitted(t, e, "race", []string{"root", fmt.Sprintf("w%d", w)})
}

func testStrictRaceOneHandle(t *testing.T, e *env) {
	ctx := t.Context()
	s, err := e.repo(alice).Create(ctx, repository.CreateOptions{ID: "race", Strict: true})
	require.NoError(t, err)
	require.NoError(t, s.Append(ctx, msg("root", "", "start")))
	const n = 6
	var appends []func() error
	for i := range n {
		appends = append(appends, func() error { return s.AppendIf(ctx, "root", msg(fmt.Sprintf("w%d", i), "root", "turn")) })
	}
	w := raceAppends(t, appends)
	checkCommitted(t, e, "race", []string{"root", fmt.Sprintf("w%d", w)})
}

func testStrictLeafMovesHead(t *testing.T, e *env) {
	ctx := t.Context()
	s, err := e.repo(alice).Create(ctx, repository.CreateOptions{ID: "s", Strict: true})
	require.NoError(t, err)
	require.NoError(t, s.Append(ctx, msg("a", "", "1"), msg("b", "a", "2")))
	require.NoError(t, s.AppendIf(ctx, "b", leaf("l1", "b", "a")))
	require.Equal(t, "a", s.Head())
	require.ErrorIs(t, s.AppendIf(ctx, "b", msg("c", "b", "3")), repository.ErrStaleHead)
	require.NoError(t, s.AppendIf(ctx, "a", msg("c", "a", "3")))

	fresh, err := e.repo(alice).Open(ctx, "s")
	require.NoError(t, err)
	require.NoError(t, fresh.Err())
	require.Equal(t, "c", fresh.Head())
	c, err := fresh.Context(ctx)
	require.NoError(t, err)
	require.Len(t, c.Messages, 2) // a, c: b is on another branch
}

func testStrictHeadMismatch(t *testing.T, e *env) {
	ctx := t.Context()
	s, err := e.repo(alice).Create(ctx, repository.CreateOptions{ID: "s", Strict: true})
	require.NoError(t, err)
	require.NoError(t, s.Append(ctx, msg("a", "", "1")))
	require.NoError(t, s.Append(ctx, msg("b", "a", "2")))
	segs, err := e.store.ListSegments(ctx, s.Ref())
	require.NoError(t, err)
	require.Len(t, segs, 3)

	// A committed segment vanishes: the head no longer matches the entries.
	require.NoError(t, e.bucket.Delete(ctx, segs[2].Key))
	broken, err := e.repo(alice).Open(ctx, "s")
	require.NoError(t, err, "a mismatched session still opens for reading")
	require.ErrorIs(t, broken.Err(), repository.ErrHeadMismatch)
	err = broken.Append(ctx, msg("c", "a", "3"))
	require.ErrorIs(t, err, repository.ErrHeadMismatch)
	require.Contains(t, err.Error(), "stored head")
	entries, err := broken.Entries(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, ids(entries))
}

func testStrictIgnoresUncommitted(t *testing.T, e *env) {
	ctx := t.Context()
	r := e.repo(alice)
	s, err := r.Create(ctx, repository.CreateOptions{ID: "s", Strict: true})
	require.NoError(t, err)
	require.NoError(t, s.Append(ctx, msg("a", "", "1")))
	// A writer that crashed between its segment and its head write.
	_, err = e.store.AppendSegment(ctx, s.Ref(), [][]byte{msg("ghost", "a", "never committed")}, transcriptWriter(t, "crashed"))
	require.NoError(t, err)
	opened, err := r.Open(ctx, "s")
	require.NoError(t, err)
	require.NoError(t, opened.Err())
	entries, err := opened.Entries(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{"a"}, ids(entries), "strict readers ignore uncommitted segments")
	// An append at head "a" is not blocked by the ghost, and may reuse its id.
	require.NoError(t, opened.Append(ctx, msg("ghost", "a", "committed this time")))

	// Fresh garbage is kept (an append may be in flight), old garbage goes.
	n, err := r.CollectUncommitted(ctx, "s", time.Hour)
	require.NoError(t, err)
	require.Zero(t, n)
	e.clock.Advance(2 * time.Hour)
	n, err = r.CollectUncommitted(ctx, "s", time.Hour)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	segs, err := e.store.ListSegments(ctx, s.Ref())
	require.NoError(t, err)
	require.Len(t, segs, 3, "header, a, ghost (committed)")
	checkCommitted(t, e, "s", []string{"a", "ghost"})
	entries, err = opened.Entries(ctx)
	require.NoError(t, err)
	require.Contains(t, string(entries[1].Raw()), "committed this time")
}

func testCreateExisting(t *testing.T, e *env) {
	ctx := t.Context()
	r := e.repo(alice)
	_, err := r.Create(ctx, repository.CreateOptions{ID: "s"})
	require.NoError(t, err)
	for _, strict := range []bool{false, true} {
		_, err = e.repo(alice).Create(ctx, repository.CreateOptions{ID: "s", Strict: strict})
		require.ErrorIs(t, err, bucket.ErrExists)
	}
	// Racing strict creates: exactly one wins.
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range errs {
		rr := e.repo(alice)
		wg.Go(func() { _, errs[i] = rr.Create(ctx, repository.CreateOptions{ID: "raced", Strict: true}) })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
		} else {
			require.ErrorIs(t, err, bucket.ErrExists)
		}
	}
	require.Equal(t, 1, won)
	checkHeaderOnly(t, e, "raced")
}

// checkHeaderOnly checks that a session holds just its header segment.
func checkHeaderOnly(t *testing.T, e *env, id string) {
	t.Helper()
	s, err := e.repo(alice).Open(t.Context(), id)
	require.NoError(t, err)
	require.NoError(t, s.Err())
	segs, err := e.store.ListSegments(t.Context(), s.Ref())
	require.NoError(t, err)
	require.Len(t, segs, 1)
}

func testForkThenAppendBoth(t *testing.T, e *env) {
	ctx := t.Context()
	for _, strict := range []bool{false, true} {
		r := e.repo(alice)
		src, err := r.Create(ctx, repository.CreateOptions{ID: fmt.Sprintf("src-%v", strict), Cwd: "/w", Strict: strict})
		require.NoError(t, err)
		require.NoError(t, src.Append(ctx, msg("m1", "", "1"), msg("m2", "m1", "2")))
		require.NoError(t, src.Append(ctx, msg("m3", "m2", "3"), msg("m4", "m3", "4")))

		fork, err := r.Fork(ctx, src.ID(), "m2")
		require.NoError(t, err)
		require.NotEqual(t, src.ID(), fork.ID())
		require.Equal(t, strict, fork.Strict())
		require.Equal(t, src.ID(), fork.Header().ParentSession())
		require.Equal(t, "/w", fork.Header().Cwd())
		require.NoError(t, fork.Append(ctx, msg("f3", "m2", "fork")))
		require.NoError(t, src.Append(ctx, msg("m5", "m4", "5")))

		for id, want := range map[string][]string{src.ID(): {"m1", "m2", "m3", "m4", "m5"}, fork.ID(): {"m1", "m2", "f3"}} {
			s, err := e.repo(alice).Open(ctx, id)
			require.NoError(t, err)
			require.NoError(t, s.Err())
			entries, err := s.Entries(ctx)
			require.NoError(t, err)
			require.Equal(t, want, ids(entries), "session %s", id)
			require.Equal(t, want[len(want)-1], s.Head())
		}
		_, err = r.Fork(ctx, src.ID(), "nope")
		require.ErrorIs(t, err, bucket.ErrNotFound)
	}
}

func testDeleteThenOpen(t *testing.T, e *env) {
	ctx := t.Context()
	r := e.repo(alice)
	for _, strict := range []bool{false, true} {
		id := fmt.Sprintf("doomed-%v", strict)
		s, err := r.Create(ctx, repository.CreateOptions{ID: id, Strict: strict})
		require.NoError(t, err)
		require.NoError(t, s.Append(ctx, msg("m1", "", "bye")))
		reader, err := e.repo(alice).Open(ctx, id)
		require.NoError(t, err)

		require.NoError(t, r.Delete(ctx, id))
		require.Empty(t, keys(t, e.bucket, sessionPrefix(s)), "every segment, mark and head is gone")
		_, err = r.Open(ctx, id)
		require.ErrorIs(t, err, bucket.ErrNotFound)
		_, err = reader.Entries(ctx)
		require.ErrorIs(t, err, bucket.ErrNotFound, "an open handle sees the deletion")
		require.ErrorIs(t, reader.Append(ctx, msg("m2", "m1", "late")), bucket.ErrNotFound)
		require.ErrorIs(t, r.Delete(ctx, id), bucket.ErrNotFound)
		require.Empty(t, keys(t, e.bucket, sessionPrefix(s)), "a refused append writes nothing")
	}
	list, err := r.List(ctx)
	require.NoError(t, err)
	require.Empty(t, list)
}

func testWatch(t *testing.T, e *env, strict bool) {
	ctx := t.Context()
	writer := e.repo(alice)
	s, err := writer.Create(ctx, repository.CreateOptions{ID: "watched", Strict: strict})
	require.NoError(t, err)
	require.NoError(t, s.Append(ctx, msg("m1", "", "before the watch")))

	watcher := e.repo(alice)
	w, err := watcher.Open(ctx, "watched")
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	got := make(chan []string, 16)
	done := make(chan error, 1)
	go func() {
		done <- w.Watch(wctx, func(entries []sessiontree.Entry) error {
			got <- ids(entries)
			return nil
		})
	}()

	// Another writer commits; in strict mode a losing append and a stray segment
	// must not be delivered.
	require.NoError(t, s.Append(ctx, msg("m2", "m1", "a"), msg("m3", "m2", "b")))
	if strict {
		stale, err := e.repo(alice).Open(ctx, "watched")
		require.NoError(t, err)
		require.NoError(t, s.Append(ctx, msg("m4", "m3", "c")))
		require.ErrorIs(t, stale.AppendIf(ctx, "m3", msg("x", "m3", "loser")), repository.ErrStaleHead)
	} else {
		require.NoError(t, s.Append(ctx, msg("m4", "m3", "c")))
	}
	// Writes under the watcher's own writer id are not delivered.
	own, err := watcher.Open(ctx, "watched")
	require.NoError(t, err)
	require.NoError(t, own.Append(ctx, msg("own", "m4", "mine")))
	s, err = writer.Open(ctx, "watched")
	require.NoError(t, err)
	require.NoError(t, s.Append(ctx, msg("m5", "own", "d")))

	var delivered []string
	deadline := time.After(20 * time.Second)
	for len(delivered) < 4 {
		select {
		case batch := <-got:
			delivered = append(delivered, batch...)
		case <-deadline:
			t.Fatalf("watch delivered %v, want m2..m5", delivered)
		}
	}
	require.Equal(t, []string{"m2", "m3", "m4", "m5"}, delivered)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	select {
	case extra := <-got:
		t.Fatalf("delivered again: %v", extra)
	default:
	}
}

func testRewind(t *testing.T, e *env) {
	ctx := t.Context()
	s, err := e.repo(alice).Create(ctx, repository.CreateOptions{ID: "s", Name: "rewind me"})
	require.NoError(t, err)
	info := s.Head()
	compaction := `{"type":"compaction","id":"c1","parentId":"m3","timestamp":"2026-03-01T12:00:05.000Z","summary":"earlier","firstKeptEntryId":"m2","tokensBefore":100}`
	model := `{"type":"model_change","id":"mc","parentId":"m1","timestamp":"2026-03-01T12:00:01.000Z","provider":"p","modelId":"x"}`
	require.NoError(t, s.Append(ctx, msg("m1", info, "one"), []byte(model)))
	require.NoError(t, s.Append(ctx, msg("m2", "mc", "two"), msg("m3", "m2", "three")))
	require.NoError(t, s.Append(ctx, []byte(compaction), msg("m4", "c1", "four")))
	require.NoError(t, s.Append(ctx, msg("b1", "m2", "branch"), leaf("l1", "b1", "m4"), msg("m5", "m4", "five")))

	contexts := map[string]sessiontree.Context{}
	var file bytes.Buffer
	require.NoError(t, s.Export(ctx, &file))
	lines := strings.SplitAfter(strings.TrimSuffix(file.String(), "\n"), "\n")
	entries, err := s.Entries(ctx)
	require.NoError(t, err)
	require.Len(t, lines, len(entries)+1)
	for i, entry := range entries {
		truncated := strings.Join(lines[:i+2], "") // header and entries up to i
		_, fileEntries, _, err := sessiontree.ParseSession(strings.NewReader(truncated))
		require.NoError(t, err)
		want := sessiontree.BuildContextFrom(fileEntries, nil)

		c, at, err := s.ContextAt(ctx, entry.ID())
		require.NoError(t, err)
		require.Equal(t, ids(fileEntries), ids(at), "entries at %s", entry.ID())
		require.Equal(t, string(want.JSON()), string(c.JSON()), "context at %s", entry.ID())
		contexts[entry.ID()] = c
	}
	// The rewound contexts differ as the session did: before and after the
	// compaction, on the branch, and after the leaf entry moved back.
	require.Len(t, contexts["m3"].Messages, 3)
	require.Contains(t, string(contexts["m4"].Messages[0]), `"compactionSummary"`)
	require.Len(t, contexts["m4"].Messages, 4) // summary, m2, m3, m4
	require.Len(t, contexts["b1"].Messages, 3) // m1, m2, b1
	require.Equal(t, string(contexts["m4"].JSON()), string(contexts["l1"].JSON()))
	require.Nil(t, contexts["m1"].Model)
	require.Equal(t, "x", contexts["mc"].Model.ModelID)
	_, _, err = s.ContextAt(ctx, "unknown")
	require.ErrorIs(t, err, bucket.ErrNotFound)
}

func testOpenAsOf(t *testing.T, e *env) {
	ctx := t.Context()
	for _, strict := range []bool{false, true} {
		id := fmt.Sprintf("s-%v", strict)
		r := e.repo(alice)
		before := e.clock.Now()
		s, err := r.Create(ctx, repository.CreateOptions{ID: id, Strict: strict})
		require.NoError(t, err)
		require.NoError(t, s.Append(ctx, msg("m1", "", "one")))
		e.clock.Advance(time.Minute)
		mid := e.clock.Now()
		e.clock.Advance(time.Minute)
		require.NoError(t, s.Append(ctx, msg("m2", "m1", "two")))
		if strict { // an uncommitted segment from before mid stays invisible
			_, err := e.store.AppendSegment(ctx, s.Ref(), [][]byte{msg("ghost", "m1", "x")}, transcriptWriter(t, "crashed"))
			require.NoError(t, err)
		}

		old, err := r.OpenAsOf(ctx, id, mid)
		require.NoError(t, err)
		entries, err := old.Entries(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"m1"}, ids(entries))
		require.Equal(t, "m1", old.Head())
		require.ErrorIs(t, old.Append(ctx, msg("m3", "m1", "no")), repository.ErrReadOnly)

		now, err := r.OpenAsOf(ctx, id, e.clock.Now())
		require.NoError(t, err)
		entries, err = now.Entries(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"m1", "m2"}, ids(entries))

		_, err = r.OpenAsOf(ctx, id, before)
		require.ErrorIs(t, err, bucket.ErrNotFound, "the session did not exist yet")
	}
}

func TestRepository_Validation(t *testing.T) {
	e := newEnv(t, membucket.New())
	ctx := t.Context()
	r := e.repo(alice)
	for _, id := range []string{"café", "sp ace", "é"} { // the store's one id rule (transcript.ValidatePart)
		s, err := r.Create(ctx, repository.CreateOptions{ID: id})
		require.NoError(t, err, "create %q", id)
		require.Equal(t, id, s.ID())
		_, err = r.Open(ctx, id)
		require.NoError(t, err, "open %q", id)
	}
	for _, id := range []string{"", ".", "..", "a/b", "a..b", ".hidden", "x.log", "L0", "gc", "a\u202eb", "a\nb", strings.Repeat("x", 129)} {
		_, err := r.Create(ctx, repository.CreateOptions{ID: id})
		if id == "" {
			require.NoError(t, err, "an empty id means a generated one")
			continue
		}
		require.ErrorIs(t, err, repository.ErrInvalid, "create %q", id)
		_, err = r.Open(ctx, id)
		require.ErrorIs(t, err, repository.ErrInvalid, "open %q", id)
	}
	for _, name := range []string{" ", "a\nb", strings.Repeat("n", repository.MaxNameLen+1), "\xff"} {
		_, err := r.Create(ctx, repository.CreateOptions{Name: name})
		require.ErrorIs(t, err, repository.ErrInvalid, "name %q", name)
	}
	for _, o := range []repository.Owner{{}, {Tenant: "t"}, {User: "u"}, {Tenant: "t\x00", User: "u"},
		{Tenant: strings.Repeat("t", 61), User: "u"}} {
		_, err := repository.New(e.store, o, repository.Config{})
		require.ErrorIs(t, err, repository.ErrInvalid, "owner %+v", o)
	}
	_, err := r.Open(ctx, "missing")
	require.ErrorIs(t, err, bucket.ErrNotFound)
	s, err := r.Create(ctx, repository.CreateOptions{ID: "plain"})
	require.NoError(t, err)
	require.ErrorIs(t, s.AppendIf(ctx, "", msg("m1", "", "x")), repository.ErrInvalid, "AppendIf needs strict mode")
}

func TestOwner_Namespace(t *testing.T) {
	tests := []struct {
		owner repository.Owner
		want  string
	}{
		{repository.Owner{Tenant: "acme", User: "alice@acme.com"}, "acme~alice@acme.com"},
		{repository.Owner{Tenant: "a~b", User: "c"}, "a%7Eb~c"},
		{repository.Owner{Tenant: "a", User: "b~c"}, "a~b%7Ec"},
		{repository.Owner{Tenant: "a.b", User: "c"}, "a.b~c"},
		{repository.Owner{Tenant: "a", User: "b.c"}, "a~b.c"},
		{repository.Owner{Tenant: ".x", User: "..y"}, "%2Ex~%2E%2Ey"},
		{repository.Owner{Tenant: "a..b", User: "c/d"}, "a.%2Eb~c%2Fd"},
		{repository.Owner{Tenant: "50%", User: "ü"}, "50%25~%C3%BC"},
		// A namespace never ends in the reserved local-file suffix.
		{repository.Owner{Tenant: "a.log", User: "bob.log"}, "a%2Elog~bob%2Elog"},
		{repository.Owner{Tenant: "a", User: "bob.logs"}, "a~bob.logs"},
	}
	seen := map[string]repository.Owner{}
	for _, tt := range tests {
		got, err := tt.owner.Namespace()
		require.NoError(t, err, "%+v", tt.owner)
		require.Equal(t, tt.want, got, "%+v", tt.owner)
		prev, dup := seen[got]
		require.False(t, dup, "%+v and %+v share namespace %q", prev, tt.owner, got)
		seen[got] = tt.owner
	}
	rc, err := alice.Identity()
	require.NoError(t, err)
	ns, _ := alice.Namespace()
	require.Equal(t, ns, rc.NamespaceName())
	require.Equal(t, alice, repository.OwnerOf(sessiontree.Identity{Namespace: "acme", UserID: "alice@acme.example"}))
}
