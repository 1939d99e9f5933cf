package repository_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/repository"
	"github.com/transcriptstore/transcript/transcript"
)

// cliHeader is a Pi session header as the command line stores it.
func cliHeader(id, cwd string) []byte {
	return fmt.Appendf(nil, `{"type":"session","version":3,"id":%q,"timestamp":"2026-03-01T11:00:00.000Z","cwd":%q}`, id, cwd)
}

// TestRepository_ListPage: a list reads only the sessions' summaries (strict
// heads, summary objects), filters by cwd, pages with a cursor, and answers what
// opening each session answers, for sessions the repository wrote and for one
// written straight to the store (as the command line, a SessionTree or follow
// write), whose summary is derived once, cached and derived again when its
// segments change.
func TestRepository_ListPage(t *testing.T) {
	for _, be := range backends {
		if be.name != "file" && be.name != "minio" {
			continue
		}
		t.Run(be.name, func(t *testing.T) {
			cb := newCountingBucket(be.new(t))
			e := newEnv(t, cb)
			ctx := t.Context()
			r := e.repo(alice)
			for i, o := range []repository.CreateOptions{
				{ID: "s1", Cwd: "/a", Strict: true, Name: "first"},
				{ID: "s2", Cwd: "/b", Strict: true},
				{ID: "s3", Cwd: "/a"},
				{ID: "s4", Cwd: "/b"},
			} {
				s, err := r.Create(ctx, o)
				require.NoError(t, err)
				for j := range i + 1 {
					id := fmt.Sprintf("%s-%d", o.ID, j)
					parent := ""
					if j > 0 {
						parent = fmt.Sprintf("%s-%d", o.ID, j-1)
					}
					require.NoError(t, s.Append(ctx, msg(id, parent, "hi")))
				}
			}
			cli := transcript.TranscriptRef{Namespace: r.Namespace(), AgentID: r.AgentID(), SessionID: "s5"}
			w := transcriptWriter(t, "cli")
			_, err := e.store.AppendSegment(ctx, cli, [][]byte{cliHeader("s5", "/a"), msg("c1", "", "x")}, w)
			require.NoError(t, err)

			want, err := r.List(ctx) // reads every session whole
			require.NoError(t, err)
			require.Len(t, want, 5)

			cb.take()
			page, err := r.ListPage(ctx, repository.ListOptions{})
			require.NoError(t, err)
			require.Equal(t, want, page.Sessions)
			require.Empty(t, page.Next)
			first := cb.take()
			require.Equal(t, 3, first["put"], "the derived summaries of the default-mode sessions s3, s4, s5 are stored once")
			require.Contains(t, keys(t, cb, e.store.SessionPrefix(cli)), e.store.SessionPrefix(cli)+transcript.SummaryName)
			stray, err := e.store.StrayKeys(ctx, cli)
			require.NoError(t, err)
			require.Empty(t, stray, "a summary object is not a stray key")
			cb.take()

			page, err = r.ListPage(ctx, repository.ListOptions{})
			require.NoError(t, err)
			require.Equal(t, want, page.Sessions)
			n := cb.take()
			// One LIST of the sessions, a GET of each head (404 for s3..s5), and for
			// each default-mode session one LIST of its segments and a GET of its
			// summary: no segment is read, nothing is written.
			require.Equal(t, map[string]int{"list": 1 + 3, "get": 5 + 3}, n)

			tests := []struct {
				name string
				opts repository.ListOptions
				ids  []string
				next string
			}{
				{"cwd /a", repository.ListOptions{Cwd: "/a"}, []string{"s1", "s3", "s5"}, ""},
				{"cwd /b", repository.ListOptions{Cwd: "/b"}, []string{"s2", "s4"}, ""},
				{"cwd none", repository.ListOptions{Cwd: "/none"}, nil, ""},
				{"first page", repository.ListOptions{Limit: 2}, []string{"s1", "s2"}, "s2"},
				{"second page", repository.ListOptions{Limit: 2, After: "s2"}, []string{"s3", "s4"}, "s4"},
				{"last page", repository.ListOptions{Limit: 2, After: "s4"}, []string{"s5"}, ""},
				{"cwd pages", repository.ListOptions{Limit: 1, After: "s1", Cwd: "/a"}, []string{"s3"}, "s3"},
				{"past the end", repository.ListOptions{After: "s9"}, nil, ""},
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					page, err := r.ListPage(ctx, tc.opts)
					require.NoError(t, err)
					require.Equal(t, tc.ids, infoIDs(page.Sessions))
					require.Equal(t, tc.next, page.Next)
					for _, info := range page.Sessions {
						require.Contains(t, want, info)
					}
				})
			}

			// An append written without the repository changes s5's segments: the
			// summary is derived again.
			_, err = e.store.AppendSegment(ctx, cli, [][]byte{msg("c2", "c1", "y")}, w)
			require.NoError(t, err)
			page, err = r.ListPage(ctx, repository.ListOptions{After: "s4"})
			require.NoError(t, err)
			require.Len(t, page.Sessions, 1)
			require.Equal(t, 2, page.Sessions[0].Entries)
			require.Equal(t, "c2", page.Sessions[0].Leaf)
			require.Equal(t, "/a", page.Sessions[0].Cwd)

			// A deleted session is not listed, even if its summary object were left.
			require.NoError(t, r.Delete(ctx, "s3"))
			page, err = r.ListPage(ctx, repository.ListOptions{Cwd: "/a"})
			require.NoError(t, err)
			require.Equal(t, []string{"s1", "s5"}, infoIDs(page.Sessions))
		})
	}
}

// TestRepository_ListPageSummaryFollowsAppends: a strict session's listed
// metadata is the one its head carries, moved by every append (entries, name,
// updated time) and kept by a compaction.
func TestRepository_ListPageSummaryFollowsAppends(t *testing.T) {
	e := newEnv(t, backends[1].new(t))
	ctx := t.Context()
	r := e.repo(alice)
	s, err := r.Create(ctx, repository.CreateOptions{ID: "s", Cwd: "/w", Strict: true})
	require.NoError(t, err)
	require.NoError(t, s.Append(ctx, msg("a", "", "1")))
	require.NoError(t, s.Append(ctx, msg("b", "a", "2"), []byte(`{"type":"session_info","id":"n","parentId":"b","timestamp":"2026-03-01T12:00:00.000Z","name":"renamed"}`)))
	fork, err := r.Fork(ctx, "s", "a")
	require.NoError(t, err)
	res, err := e.store.Compact(ctx, s.Ref(), transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
	require.NoError(t, err)
	require.NotEmpty(t, res.Compactions)

	page, err := r.ListPage(ctx, repository.ListOptions{})
	require.NoError(t, err)
	want, err := r.List(ctx)
	require.NoError(t, err)
	require.Equal(t, want, page.Sessions)
	require.Equal(t, []string{fork.ID(), "s"}, infoIDs(page.Sessions)) // a random UUID sorts before "s"
	for _, info := range page.Sessions {
		if info.ID == "s" {
			require.Equal(t, 3, info.Entries)
			require.Equal(t, "renamed", info.Name)
			require.Equal(t, "/w", info.Cwd)
			require.True(t, info.Strict)
		} else {
			require.Equal(t, "s", info.ParentSession)
		}
	}
}

// infoIDs returns the ids of infos.
func infoIDs(infos []repository.SessionInfo) []string {
	var out []string
	for _, in := range infos {
		out = append(out, in.ID)
	}
	return out
}
