package sessiontree_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/membucket"
)

// winnerSetup is a replica that holds its own version of an entry while a slow
// writer stored another version of the same id, earlier in key order.
type winnerSetup struct {
	store  *transcript.Store
	cfg    sessiontree.Config
	tree   *sessiontree.Tree
	files  sessiontree.Files
	id     string // the id both versions carry
	theirs string // the stored version that wins
}

func newWinnerSetup(t *testing.T) winnerSetup {
	ctx := context.Background()
	b := membucket.New()
	now := func() time.Time { return time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC) }
	store, slow := fullListingStore(t, b, now, 0), fullListingStore(t, b, now, -time.Hour)
	w, err := transcript.NewWriter("replica")
	require.NoError(t, err)
	cfg := testConfig(t)
	cfg.Uploader, cfg.Store = &mirror.Direct{Store: store, Writer: w}, store
	tree, _, err := sessiontree.Open(ctx, cfg, who, "agent", "win", sessiontree.HeaderOptions{})
	require.NoError(t, err)
	first, err := tree.AppendMessage(msg(userMsg, "one"))
	require.NoError(t, err)
	mine, err := tree.AppendMessage(msg(userMsg, "two"))
	require.NoError(t, err)
	require.NoError(t, tree.Flush(ctx))
	_, err = tree.Pull(ctx)
	require.NoError(t, err)
	require.NoError(t, tree.Flush(ctx))

	sw, err := transcript.NewWriter("slow")
	require.NoError(t, err)
	theirs := fmt.Sprintf(`{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-12-01T11:00:00.000Z","message":{"role":"user","content":"theirs","timestamp":1}}`, mine.ID(), first.ID())
	_, err = slow.AppendSegment(ctx, tree.Ref(), [][]byte{[]byte(theirs)}, sw)
	require.NoError(t, err)
	return winnerSetup{store: store, cfg: cfg, tree: tree, files: sessiontree.FilesOf(cfg.Root, tree.Ref()), id: mine.ID(), theirs: theirs}
}

// A pull that finds an earlier stored version of an entry the replica holds
// takes it, and the next flush rewrites both local files to hold it: a tree
// loaded from them agrees with a full read. Killed between the rewrite of the
// log and that of the context file, the replica loads the old version and its
// next pull takes the stored one again.
func TestPull_ConflictWinnerRewritesFiles(t *testing.T) {
	tests := []struct {
		name  string
		crash bool
	}{
		{"rewritten", false},
		{"killed between the log and the context file", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			s := newWinnerSetup(t)
			oldCtx, err := os.ReadFile(s.files.Context)
			require.NoError(t, err)
			oldSeg, err := os.ReadFile(s.files.Segments)
			require.NoError(t, err)

			rep, err := s.tree.Pull(ctx)
			require.NoError(t, err)
			require.Len(t, rep.Conflicts, 1)
			e, err := s.tree.Entry(s.id)
			require.NoError(t, err)
			require.Equal(t, s.theirs, string(e.Raw()))
			requireAgrees(t, s.store, s.tree, "after the pull")
			require.NoError(t, s.tree.Flush(ctx))
			for _, p := range []string{s.files.Log, s.files.Context} {
				data, err := os.ReadFile(p)
				require.NoError(t, err)
				require.Contains(t, string(data), s.theirs, p)
				require.NotContains(t, string(data), `"text":"two"`, p)
			}
			if tt.crash {
				require.NoError(t, os.WriteFile(s.files.Context, oldCtx, 0o644))
				require.NoError(t, os.WriteFile(s.files.Segments, oldSeg, 0o644))
			}
			loaded, _, err := sessiontree.Load(ctx, s.cfg, who, "agent", "win")
			require.NoError(t, err)
			_, err = loaded.MergeLog(ctx)
			require.NoError(t, err)
			rep, err = loaded.Pull(ctx)
			require.NoError(t, err)
			requireAgrees(t, s.store, loaded, "loaded")
			if tt.crash {
				require.Len(t, rep.Conflicts, 1, "the stored version is taken again")
			}
		})
	}
}

// Segments files of older versions still load. Version 2 (written before
// origins were kept) gives its leaf; its set is not used, so the next pull reads
// the whole session and learns every origin. Version 3 (origins inline, before
// the origins file) gives its set and origins: the next pull reads only what is
// new. Either way the next write is of version 4, with an origins file.
func TestLoad_OlderSegmentsFiles(t *testing.T) {
	tests := []struct {
		name string
		// old makes the file's body (before its checksum line) from the lines of
		// version 4 before its origins line and the records of the origins file.
		old     func(lines []string, records string) string
		keepSet bool
	}{
		{"version 2", func(lines []string, _ string) string {
			return "transcript-segments 2\n" + lines[1] + "\nfrontier -\n" + strings.Join(lines[2:], "\n") + "\n"
		}, false},
		{"version 3", func(lines []string, records string) string {
			return "transcript-segments 3\n" + strings.Join(lines[1:], "\n") + "\norigins\n" + records
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			s := newWinnerSetup(t)
			cur, err := os.ReadFile(s.files.Segments)
			require.NoError(t, err)
			origins, err := os.ReadFile(s.files.Origins)
			require.NoError(t, err)
			records, ok := strings.CutPrefix(string(origins), "transcript-origins 1\n")
			require.True(t, ok, "the origins file's header")
			lines := strings.Split(string(cur), "\n")
			require.Equal(t, "transcript-segments 4", lines[0])
			n := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "origins ") })
			require.Positive(t, n)
			body := tt.old(lines[:n], records)
			body += fmt.Sprintf("xxh64 %016x\n", xxhash.Sum64String(body))
			require.NoError(t, os.WriteFile(s.files.Segments, []byte(body), 0o644))
			require.NoError(t, os.Remove(s.files.Origins))

			loaded, rep, err := sessiontree.Load(ctx, s.cfg, who, "agent", "win")
			require.NoError(t, err)
			require.True(t, rep.Clean())
			leaf, _ := loaded.Leaf()
			want, _ := s.tree.Leaf()
			require.Equal(t, want, leaf, "the file's leaf")
			if tt.keepSet {
				require.NotZero(t, s.tree.HeldSegments())
				require.Equal(t, s.tree.HeldSegments(), loaded.HeldSegments(), "the set is used")
			} else {
				require.Zero(t, loaded.HeldSegments(), "no origins: the set is read again")
			}
			_, err = loaded.Pull(ctx)
			require.NoError(t, err)
			requireAgrees(t, s.store, loaded, "loaded")
			_, err = loaded.AppendMessage(msg(userMsg, "after the upgrade"))
			require.NoError(t, err)
			require.NoError(t, loaded.Flush(ctx))
			seg, err := os.ReadFile(s.files.Segments)
			require.NoError(t, err)
			require.True(t, strings.HasPrefix(string(seg), "transcript-segments 4\n"))
			require.FileExists(t, s.files.Origins)
		})
	}
}

// A replica restored from a store that holds two versions of an id takes the
// winner and reports no conflict: the store's own conflict is not one with the
// replica (ReadAll and `transcript verify` report it).
func TestRestore_StoredConflictNotReported(t *testing.T) {
	ctx := context.Background()
	s := newWinnerSetup(t)
	cfg := testConfig(t)
	cfg.Store = s.store
	restored, rep, err := sessiontree.Open(ctx, cfg, who, "agent", "win", sessiontree.HeaderOptions{})
	require.NoError(t, err)
	require.Empty(t, rep.Conflicts)
	requireAgrees(t, s.store, restored, "restored")
	e, err := restored.Entry(s.id)
	require.NoError(t, err)
	require.Equal(t, s.theirs, string(e.Raw()))
}
