package sessiontree_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket"
)

var who = sessiontree.Identity{Namespace: "tenant-a", UserID: "u1"}

func msg(format string, args ...any) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(format, args...))
}

func TestFlush_DeferredThenIncremental(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	up := &recorder{}
	cfg.Uploader = up
	tr, err := sessiontree.New(cfg, who, "agent-1", "sess-1", sessiontree.HeaderOptions{Cwd: "/w"})
	require.NoError(t, err)
	require.Equal(t, filepath.Join(cfg.Root, "tenant-a", "agents", "agent-1", "sessions", "sess-1.jsonl"), tr.ContextPath())
	require.Equal(t, filepath.Join(cfg.Root, "tenant-a", "agents", "agent-1", "sessions", "sess-1.log.jsonl"), tr.LogPath())

	u, err := tr.AppendMessage(msg(userMsg, "hi"))
	require.NoError(t, err)
	require.Regexp(t, `^[0-9a-f]{8}$`, u.ID())
	require.Regexp(t, `"timestamp":"2026-09-25T22:00:0\d\.000Z"`, string(u.Raw()))
	_, err = os.Stat(tr.ContextPath())
	require.ErrorIs(t, err, os.ErrNotExist, "nothing is written before the first Flush")
	_, err = os.Stat(filepath.Dir(tr.ContextPath()))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.Empty(t, up.all())

	a, err := tr.AppendMessage(msg(assistantMsg, "hello", "p", "m"))
	require.NoError(t, err)
	p, _ := a.ParentID()
	require.Equal(t, u.ID(), p)
	require.NoError(t, tr.Flush(ctx))
	require.Len(t, up.batches, 1)
	b := up.batches[0]
	require.Equal(t, transcript.TranscriptRef{Namespace: "tenant-a", AgentID: "agent-1", SessionID: "sess-1"}, b.Ref)
	require.Len(t, b.Entries, 3)
	require.Equal(t, string(tr.Header().Raw()), string(b.Entries[0]), "the header leads the first batch")
	require.Equal(t, string(u.Raw()), string(b.Entries[1]))
	require.Equal(t, sessiontree.Files{Context: tr.ContextPath(), Log: tr.LogPath(), Segments: tr.SegmentsPath(), Origins: tr.OriginsPath(), Unsent: tr.UnsentPath()}, b.Files)

	require.NoError(t, tr.Flush(ctx), "nothing new: no-op")
	require.Len(t, up.batches, 1)

	l, err := tr.AppendLabel(u.ID(), "start")
	require.NoError(t, err)
	require.NoError(t, tr.Flush(ctx))
	require.Len(t, up.batches, 2)
	require.Equal(t, []string{string(l.Raw())}, []string{string(up.batches[1].Entries[0])})
	require.Len(t, up.batches[1].Entries, 1)

	want := []string{string(tr.Header().Raw()), string(u.Raw()), string(a.Raw()), string(l.Raw())}
	require.Equal(t, want, lines(t, tr.LogPath()))
	require.Equal(t, want, lines(t, tr.ContextPath()))
}

func TestFlush_FailedUploadRetriesWithoutLocalDuplicates(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	up := &recorder{fail: errUpload}
	cfg.Uploader = up
	tr, err := sessiontree.New(cfg, who, "a", "s", sessiontree.HeaderOptions{})
	require.NoError(t, err)
	e1, _ := tr.AppendMessage(msg(userMsg, "1"))
	require.ErrorIs(t, tr.Flush(ctx), errUpload)
	e2, _ := tr.AppendMessage(msg(userMsg, "2"))
	require.ErrorIs(t, tr.Flush(ctx), errUpload)
	_, upload := tr.Pending()
	require.Equal(t, 2, upload)
	up.fail = nil
	require.NoError(t, tr.Flush(ctx))
	require.Len(t, up.batches, 1)
	require.Equal(t, []string{string(tr.Header().Raw()), string(e1.Raw()), string(e2.Raw())},
		[]string{string(up.batches[0].Entries[0]), string(up.batches[0].Entries[1]), string(up.batches[0].Entries[2])})
	require.Len(t, lines(t, tr.LogPath()), 3)
	require.Len(t, lines(t, tr.ContextPath()), 3)
}

func TestLoad_NoAssistantYetThenAppend(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	up := &recorder{}
	cfg.Uploader = up
	tr, err := sessiontree.New(cfg, who, "a", "s", sessiontree.HeaderOptions{})
	require.NoError(t, err)
	u, _ := tr.AppendMessage(msg(userMsg, "1"))
	require.NoError(t, tr.Flush(ctx))

	tr2, rep, err := sessiontree.Load(ctx, cfg, who, "a", "s")
	require.NoError(t, err)
	require.True(t, rep.Clean())
	a, err := tr2.AppendMessage(msg(assistantMsg, "x", "p", "m"))
	require.NoError(t, err)
	p, _ := a.ParentID()
	require.Equal(t, u.ID(), p)
	require.NoError(t, tr2.Flush(ctx))
	want := []string{string(tr.Header().Raw()), string(u.Raw()), string(a.Raw())}
	require.Equal(t, want, lines(t, tr.LogPath()))
	require.Equal(t, want, lines(t, tr.ContextPath()))
	require.Len(t, up.batches, 2)
	require.Equal(t, [][]byte{a.Raw()}, up.batches[1].Entries, "loaded entries and the header are never uploaded again")
}

func TestIdentity_Namespace(t *testing.T) {
	cfg := testConfig(t)
	tr, err := sessiontree.New(cfg, sessiontree.Identity{}, "a", "s", sessiontree.HeaderOptions{})
	require.NoError(t, err)
	require.Equal(t, "default", tr.Ref().Namespace)
	require.Contains(t, tr.ContextPath(), filepath.Join(cfg.Root, "default", "agents", "a"))
	for _, bad := range []sessiontree.Identity{{Namespace: "../x"}, {Namespace: "a/b"}} {
		_, err := sessiontree.New(cfg, bad, "a", "s", sessiontree.HeaderOptions{})
		require.ErrorIs(t, err, transcript.ErrInvalidRef)
	}
	_, err = sessiontree.New(cfg, who, "a", "..", sessiontree.HeaderOptions{})
	require.ErrorIs(t, err, transcript.ErrInvalidRef)
	_, _, err = sessiontree.Load(context.Background(), cfg, who, "a", "missing")
	require.ErrorIs(t, err, bucket.ErrNotFound)
}

func TestAppendRaw_Validation(t *testing.T) {
	tr, err := sessiontree.New(testConfig(t), who, "a", "s", sessiontree.HeaderOptions{})
	require.NoError(t, err)
	for _, bad := range []string{`[]`, `{"id":"x","parentId":null}`, `{"type":"message","parentId":null}`,
		`{"type":"message","id":"x"}`, `{"type":"session","id":"x","parentId":null}`, `{"type":"m","id":"x","parentId":5}`, `{"type":"m",`} {
		_, err := tr.AppendRaw([]byte(bad))
		require.ErrorIs(t, err, pi.ErrInvalidEntry, bad)
	}
	_, err = tr.AppendRaw([]byte(`{"type":"m","id":"x","parentId":"nope"}`))
	require.ErrorIs(t, err, bucket.ErrNotFound)
	raw := `{"type":"weird","id":"x","parentId":null,"Timestamp":1,  "keep": [1, 2]}`
	en, err := tr.AppendRaw([]byte(raw))
	require.NoError(t, err)
	require.Equal(t, raw, string(en.Raw()), "bytes kept exactly")
	_, err = tr.AppendRaw([]byte(raw))
	require.NoError(t, err, "same id, same bytes: idempotent")
	require.Equal(t, 1, tr.Len())
	_, err = tr.AppendRaw([]byte(`{"type":"weird","id":"x","parentId":null}`))
	require.ErrorIs(t, err, transcript.ErrConflict)
	_, err = tr.Entry("nope")
	require.ErrorIs(t, err, bucket.ErrNotFound)
}

// buildBranchedSession makes a session with labels, a branch, a branch summary,
// a custom message and two compactions (the second keeps the first's kept
// messages).
func buildBranchedSession(t *testing.T, cfg sessiontree.Config) (*sessiontree.Tree, map[string]string) {
	t.Helper()
	tr, err := sessiontree.New(cfg, who, "agent", "branched", sessiontree.HeaderOptions{Cwd: "/w"})
	require.NoError(t, err)
	id := map[string]string{}
	must := func(name string, e sessiontree.Entry, err error) {
		t.Helper()
		require.NoError(t, err)
		id[name] = e.ID()
	}
	e, err := tr.AppendModelChange("anthropic", "claude")
	must("model", e, err)
	e, err = tr.AppendThinkingLevelChange("high")
	must("think", e, err)
	for i := 1; i <= 3; i++ {
		e, err = tr.AppendMessage(msg(userMsg, fmt.Sprintf("q%d", i)))
		must(fmt.Sprintf("u%d", i), e, err)
		e, err = tr.AppendMessage(msg(assistantMsg, fmt.Sprintf("a%d", i), "anthropic", "claude"))
		must(fmt.Sprintf("a%d", i), e, err)
	}
	e, err = tr.AppendLabel(id["u2"], "checkpoint")
	must("label", e, err)
	e, err = tr.AppendSessionInfo("my session")
	must("info", e, err)
	// Branch back to a1 and try something else.
	require.NoError(t, tr.Branch(id["a1"]))
	e, err = tr.AppendBranchSummary(id["a3"], "tried q2/q3", nil, false)
	must("bs", e, err)
	e, err = tr.AppendCustomMessage("note", json.RawMessage(`"remember <this>"`), true, nil)
	must("cm", e, err)
	e, err = tr.AppendMessage(msg(userMsg, "b1"))
	must("b1", e, err)
	e, err = tr.AppendMessage(msg(assistantMsg, "b1 answer", "openai", "gpt"))
	must("b1a", e, err)
	e, err = tr.AppendCompaction(sessiontree.Compaction{Summary: "first", FirstKeptEntryID: id["cm"], TokensBefore: 100})
	must("c1", e, err)
	e, err = tr.AppendMessage(msg(userMsg, "after c1"))
	must("u4", e, err)
	e, err = tr.AppendMessage(msg(assistantMsg, "a4", "openai", "gpt"))
	must("a4", e, err)
	e, err = tr.AppendCompaction(sessiontree.Compaction{Summary: "second", FirstKeptEntryID: id["cm"], TokensBefore: 200, Details: json.RawMessage(`{"files":[]}`)})
	must("c2", e, err)
	e, err = tr.AppendLabel(id["b1"], "")
	must("unlabel", e, err)
	e, err = tr.AppendMessage(msg(userMsg, "after c2"))
	must("u5", e, err)
	return tr, id
}

func TestTree_BranchedTwiceCompacted(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	tr, id := buildBranchedSession(t, cfg)
	c := tr.BuildContext()
	golden(t, "branched.context.json", append(c.JSON(), '\n'))
	var roles []string
	for _, m := range c.Messages {
		var v struct{ Role, Summary string }
		require.NoError(t, json.Unmarshal(m, &v))
		roles = append(roles, v.Role+":"+v.Summary)
	}
	// The second compaction keeps the first compaction's kept messages (cm, b1, b1a).
	require.Equal(t, []string{"compactionSummary:second", "custom:", "user:", "assistant:", "user:", "assistant:", "user:"}, roles)
	require.Equal(t, "high", c.ThinkingLevel)
	require.Equal(t, &sessiontree.Model{Provider: "openai", ModelID: "gpt"}, c.Model)

	// Other branch, before its summary: no compaction there.
	c = tr.BuildContextAt(id["a3"])
	require.Len(t, c.Messages, 6)
	require.Equal(t, &sessiontree.Model{Provider: "anthropic", ModelID: "claude"}, c.Model)

	require.Equal(t, map[string]string{id["u2"]: "checkpoint"}, tr.Labels())
	require.Equal(t, "my session", tr.SessionName())
	leaf, ok := tr.Leaf()
	require.True(t, ok)
	require.Equal(t, id["u5"], leaf)
	require.Equal(t, []string{id["a1"]}, ids(tr.BranchPoints()))
	ch, err := tr.Children(id["a1"])
	require.NoError(t, err)
	require.Equal(t, []string{id["u2"], id["bs"]}, ids(ch))
	path, err := tr.PathToRoot(id["b1"])
	require.NoError(t, err)
	require.Equal(t, []string{id["model"], id["think"], id["u1"], id["a1"], id["bs"], id["cm"], id["b1"]}, ids(path))
	require.Len(t, tr.Messages(), 11)

	// Persist: the context file is rewritten after the compaction, the log keeps all.
	require.NoError(t, tr.Flush(ctx))
	logLines := lines(t, tr.LogPath())
	ctxLines := lines(t, tr.ContextPath())
	require.Len(t, logLines, 1+tr.Len())
	require.Less(t, len(ctxLines), len(logLines))
	golden(t, "branched.context-file.jsonl", []byte(fmt.Sprintln(joinLines(ctxLines))))

	// Loading the rewritten context file completes the truncated path from the log,
	// so the thinking level and model set before the kept range are not lost.
	tr2, rep, err := sessiontree.Load(ctx, cfg, who, "agent", "branched")
	require.NoError(t, err)
	require.True(t, rep.Clean())
	require.Equal(t, tr.BuildContext().Messages, tr2.BuildContext().Messages)
	require.Equal(t, tr.Len(), tr2.Len())
	lrep, err := tr2.MergeLog(ctx)
	require.NoError(t, err)
	require.Zero(t, lrep.Added, "Load already read what the log adds")
	require.Equal(t, ids(tr.Entries()), ids(tr2.Entries()))
	require.Equal(t, string(tr.BuildContext().JSON()), string(tr2.BuildContext().JSON()))
	var w1, w2 = &strBuf{}, &strBuf{}
	require.NoError(t, tr.Export(w1))
	require.NoError(t, tr2.Export(w2))
	require.Equal(t, w1.s, w2.s)

	// Appending after the reload continues the files without duplicates.
	u6, err := tr2.AppendMessage(msg(userMsg, "more"))
	require.NoError(t, err)
	require.NoError(t, tr2.Flush(ctx))
	require.Equal(t, append(logLines, string(u6.Raw())), lines(t, tr.LogPath()))
	require.Equal(t, append(ctxLines, string(u6.Raw())), lines(t, tr.ContextPath()))
}

type strBuf struct{ s string }

func (b *strBuf) Write(p []byte) (int, error) { b.s += string(p); return len(p), nil }

func joinLines(ls []string) string {
	out := ""
	for i, l := range ls {
		if i > 0 {
			out += "\n"
		}
		out += l
	}
	return out
}

func TestPull_RestoreAndNoReupload(t *testing.T) {
	ctx := context.Background()
	store := newFakeStore()
	cfgA := testConfig(t)
	cfgA.Uploader, cfgA.Store = store, store
	a, err := sessiontree.New(cfgA, who, "agent", "s", sessiontree.HeaderOptions{})
	require.NoError(t, err)
	_, _ = a.AppendMessage(msg(userMsg, "hi"))
	_, _ = a.AppendMessage(msg(assistantMsg, "yo", "p", "m"))
	require.NoError(t, a.Flush(ctx))

	cfgB := testConfig(t)
	cfgB.Rand = newSeeded(2)
	upB := &recorder{}
	cfgB.Uploader, cfgB.Store = upB, store
	b, rep, err := sessiontree.Restore(ctx, cfgB, who, "agent", "s")
	require.NoError(t, err)
	require.Equal(t, 2, rep.Added)
	require.Equal(t, string(a.Header().Raw()), string(b.Header().Raw()))
	require.Equal(t, string(a.BuildContext().JSON()), string(b.BuildContext().JSON()))
	require.NoError(t, b.Flush(ctx))
	require.Empty(t, upB.all(), "entries from the store are never uploaded again")
	require.Len(t, lines(t, b.LogPath()), 3)

	n, err := b.AppendMessage(msg(userMsg, "from b"))
	require.NoError(t, err)
	require.NoError(t, b.Flush(ctx))
	require.Equal(t, [][]byte{n.Raw()}, upB.all())

	_, _, err = sessiontree.Restore(ctx, cfgB, who, "agent", "s")
	require.Error(t, err, "local files exist")
	_, _, err = sessiontree.Restore(ctx, cfgB, who, "agent", "other")
	require.ErrorIs(t, err, bucket.ErrNotFound)
}

func TestTree_ConcurrentAppendFlush(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	cfg.NoSync = true
	up := &recorder{}
	cfg.Uploader = up
	tr, err := sessiontree.New(cfg, who, "a", "s", sessiontree.HeaderOptions{})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				_, err := tr.AppendMessage(msg(userMsg, fmt.Sprintf("g%d-%d", g, i)))
				if err != nil {
					panic(err)
				}
				if i%7 == 0 {
					if err := tr.Flush(ctx); err != nil {
						panic(err)
					}
				}
				_ = tr.BuildContext()
				_ = tr.Entries()
			}
		}()
	}
	wg.Wait()
	require.NoError(t, tr.Flush(ctx))
	require.Len(t, up.all(), 201)
	require.Len(t, lines(t, tr.LogPath()), 201)
	seen := map[string]bool{}
	for _, l := range lines(t, tr.LogPath()) {
		require.False(t, seen[l])
		seen[l] = true
	}
	require.False(t, errors.Is(err, transcript.ErrConflict))
}

// TestLoad_AfterCompactionKeepsContext imports Pi files, flushes them (a compaction
// rewrites the context file) and loads them again: the loaded tree must build the
// same context as the file, thinking level and model included.
func TestLoad_AfterCompactionKeepsContext(t *testing.T) {
	for _, name := range []string{"pi-v3-browse-session.jsonl", "pi-v1-prompt-cache-replay.jsonl"} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			f, err := os.Open(filepath.Join("testdata", name))
			require.NoError(t, err)
			defer f.Close()
			cfg := testConfig(t)
			tr, _, err := sessiontree.Import(cfg, who, "agent", "imported", f)
			require.NoError(t, err)
			want := string(tr.BuildContext().JSON())
			require.NoError(t, tr.Flush(ctx))

			tr2, rep, err := sessiontree.Load(ctx, cfg, who, "agent", "imported")
			require.NoError(t, err)
			require.True(t, rep.Clean())
			require.Equal(t, want, string(tr2.BuildContext().JSON()))
			require.Equal(t, tr.Len(), tr2.Len())
		})
	}
}

// orderProbe records whether the log file existed when each batch was handed over.
type orderProbe struct {
	storesOnUpload
	localFirst bool
	fail       bool
	logExisted []bool
}

func (o *orderProbe) Upload(_ context.Context, b sessiontree.Batch) error {
	_, err := os.Stat(b.Files.Log)
	o.logExisted = append(o.logExisted, err == nil)
	if o.fail {
		return errors.New("bucket unreachable")
	}
	return nil
}

func (o *orderProbe) ReadsLocalFiles() bool { return o.localFirst }

// TestFlush_HandOverOrder checks that the batch reaches a segment uploader before
// the local files are written, and that a failed hand-over still writes them
// (the turn is durable locally), with the unsent file recording what the
// uploader lacks, until a later Flush hands it over (without writing it twice)
// and removes the record; the legacy kind of uploader sees the files written
// first and needs no record (it uploads the files themselves).
func TestFlush_HandOverOrder(t *testing.T) {
	for _, tc := range []struct {
		name       string
		localFirst bool
	}{{"segments: upload first", false}, {"legacy: local first", true}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			probe := &orderProbe{localFirst: tc.localFirst, fail: true}
			cfg := testConfig(t)
			cfg.Uploader = probe
			tr, err := sessiontree.New(cfg, who, "a", "order", sessiontree.HeaderOptions{})
			require.NoError(t, err)
			_, err = tr.AppendMessage(msg(userMsg, "hello"))
			require.NoError(t, err)

			err = tr.Flush(ctx)
			require.Error(t, err, "the failed hand-over is reported")
			require.Equal(t, []bool{tc.localFirst}, probe.logExisted)
			require.Len(t, lines(t, tr.LogPath()), 2, "the turn is durable locally")
			require.Len(t, lines(t, tr.ContextPath()), 2)
			local, upload := tr.Pending()
			require.Equal(t, 0, local)
			require.Equal(t, 1, upload)
			if tc.localFirst {
				require.NoFileExists(t, tr.UnsentPath(), "the legacy uploader uploads the files: nothing to record")
			} else {
				require.ErrorIs(t, err, sessiontree.ErrUnsent)
				require.FileExists(t, tr.UnsentPath(), "what the uploader lacks is recorded")
			}

			probe.fail = false
			require.NoError(t, tr.Flush(ctx))
			require.Len(t, lines(t, tr.LogPath()), 2, "no duplicate after the retry")
			_, upload = tr.Pending()
			require.Equal(t, 0, upload)
			require.NoFileExists(t, tr.UnsentPath(), "the record goes once all it names is handed over")
		})
	}
}

// TestOpen_RestoresFromStore: a replica without local files that opens a session
// another replica started continues it from the store instead of starting a second
// session with a conflicting header.
func TestOpen_RestoresFromStore(t *testing.T) {
	ctx := context.Background()
	store := newFakeStore()
	cfgA := testConfig(t)
	cfgA.Uploader, cfgA.Store = store, store
	a, _, err := sessiontree.Open(ctx, cfgA, who, "agent", "shared", sessiontree.HeaderOptions{Cwd: "/a"})
	require.NoError(t, err)
	first, err := a.AppendMessage(msg(userMsg, "from replica A"))
	require.NoError(t, err)
	require.NoError(t, a.Flush(ctx))

	cfgB := testConfig(t)
	cfgB.Uploader, cfgB.Store = store, store
	b, _, err := sessiontree.Open(ctx, cfgB, who, "agent", "shared", sessiontree.HeaderOptions{Cwd: "/b"})
	require.NoError(t, err)
	require.Equal(t, a.Header().Raw(), b.Header().Raw(), "the header comes from the store")
	leaf, ok := b.Leaf()
	require.True(t, ok)
	require.Equal(t, first.ID(), leaf)
	second, err := b.AppendMessage(msg(userMsg, "from replica B"))
	require.NoError(t, err)
	parent, _ := second.ParentID()
	require.Equal(t, first.ID(), parent, "B continues A's conversation")
	require.NoError(t, b.Flush(ctx))

	// A session nobody has is new.
	c, _, err := sessiontree.Open(ctx, cfgB, who, "agent", "fresh", sessiontree.HeaderOptions{})
	require.NoError(t, err)
	require.Zero(t, c.Len())
}

// After a compaction rewrote the context file to what the model still needs, a
// move of the active leaf back before it (a Branch, or a recorded leaf entry) and
// new entries there make the next flush rewrite the file again: read alone (as
// Pi, or `transcript context --file`, reads it) it must still hold the path the
// new entries hang from.
func TestFlush_LeafMovedBackBeforeACompaction(t *testing.T) {
	for _, record := range []bool{false, true} {
		t.Run(fmt.Sprintf("leaf entry %v", record), func(t *testing.T) {
			ctx := context.Background()
			tr, err := sessiontree.New(testConfig(t), who, "agent", "moved", sessiontree.HeaderOptions{})
			require.NoError(t, err)
			user := json.RawMessage(`{"role":"user","content":"first question"}`)
			answer := json.RawMessage(`{"role":"assistant","content":[],"provider":"p","model":"m"}`)
			root, err := tr.AppendMessage(user)
			require.NoError(t, err)
			_, err = tr.AppendMessage(answer)
			require.NoError(t, err)
			later, err := tr.AppendMessage(json.RawMessage(`{"role":"user","content":"later"}`))
			require.NoError(t, err)
			_, err = tr.AppendCompaction(sessiontree.Compaction{Summary: "s", FirstKeptEntryID: later.ID(), TokensBefore: 9})
			require.NoError(t, err)
			require.NoError(t, tr.Flush(ctx))
			fileContext := func() string {
				t.Helper()
				f, err := os.Open(tr.ContextPath())
				require.NoError(t, err)
				defer f.Close()
				_, es, _, err := sessiontree.ParseSession(f)
				require.NoError(t, err)
				return string(sessiontree.BuildContextFrom(es, nil).JSON())
			}
			require.NotContains(t, fileContext(), "first question", "the rewrite left the first turn out")

			require.NoError(t, tr.Branch(root.ID()))
			if record {
				_, err = tr.AppendLeaf(root.ID())
				require.NoError(t, err)
			}
			_, err = tr.AppendMessage(answer)
			require.NoError(t, err)
			require.NoError(t, tr.Flush(ctx))
			want := string(tr.BuildContext().JSON())
			require.Contains(t, want, "first question")
			require.Equal(t, want, fileContext())
		})
	}
}

// TestFlush_BatchCarriesLinks checks that a batch of entries hands the uploader
// what the tree read of each one when it appended it (the links pi.ParseEntry
// reads), so that the uploader need not parse them again; and that the first
// batch, led by the session header (not an entry), carries none.
func TestFlush_BatchCarriesLinks(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	up := &recorder{}
	cfg.Uploader = up
	tr, err := sessiontree.New(cfg, who, "a", "s", sessiontree.HeaderOptions{})
	require.NoError(t, err)
	u, err := tr.AppendMessage(msg(userMsg, "1"))
	require.NoError(t, err)
	_, err = tr.AppendMessage(msg(assistantMsg, "2", "p", "m"))
	require.NoError(t, err)
	require.NoError(t, tr.Flush(ctx))
	require.Len(t, up.batches, 1)
	require.Nil(t, up.batches[0].Links, "the header leads the first batch")

	l, err := tr.AppendLabel(u.ID(), "start")
	require.NoError(t, err)
	r, err := tr.AppendRaw([]byte(`{"type":"custom","id":"c1","parentId":"` + l.ID() + `","timestamp":"2026-09-25T22:00:09.000Z","customType":"x"}`))
	require.NoError(t, err)
	require.NoError(t, tr.Flush(ctx))
	require.Len(t, up.batches, 2)
	b := up.batches[1]
	require.Len(t, b.Links, len(b.Entries))
	for i, raw := range b.Entries {
		e, err := pi.ParseEntry(raw)
		require.NoError(t, err)
		require.Equal(t, e.Links(), b.Links[i], "entry %d", i)
	}
	require.Equal(t, []string{l.ID(), r.ID()}, []string{b.Links[0].ID, b.Links[1].ID})
	require.Equal(t, "2026-09-25T22:00:09.000Z", b.Links[1].Timestamp)
}
