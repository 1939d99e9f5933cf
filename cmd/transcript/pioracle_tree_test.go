package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
)

// TestPiOracle_SessionTree: the files a replica's SessionTree writes as it goes
// open in Pi with the context the tree builds in memory. Each tree is driven
// through its own API by a seeded choice of appends of every kind, branches (some
// recorded as leaf entries), compactions and flushes at random points; it ends
// with an assistant message, so that its leaf is the last line of both files.
//
// The log (every entry) gives Pi the whole context. The context file, rewritten
// after a compaction to what the model still needs, gives Pi the same messages;
// a thinking level or model set before the compaction's kept range is not on the
// path Pi walks in that file alone (the tree keeps the last of each there, and
// reads the rest from the log; docs/STORAGE.md), so only the messages are
// compared for it.
func TestPiOracle_SessionTree(t *testing.T) {
	node := needPi(t)
	ctx := context.Background()
	files := &treeFiles{dir: t.TempDir()}
	drivenTrees(t, ctx, files, 0x5eed, false)
	files.check(t, node, "context.mjs")
}

// drivenTrees makes 100 SessionTrees, each driven by driveTree from a seed
// (salted), and adds their files to files.
func drivenTrees(t *testing.T, ctx context.Context, files *treeFiles, salt uint64, pi16 bool) []*sessiontree.Tree {
	t.Helper()
	var trees []*sessiontree.Tree
	for seed := range uint64(100) {
		r := rand.New(rand.NewPCG(seed, salt))
		tree, err := sessiontree.New(sessiontree.Config{Root: filepath.Join(files.dir, "trees"), NoSync: true},
			sessiontree.Identity{Namespace: "default"}, "oracle", fmt.Sprintf("t%02d", seed), sessiontree.HeaderOptions{Cwd: "/work/project"})
		require.NoError(t, err)
		driveTree(t, ctx, r, tree, pi16)
		files.add(t, fmt.Sprintf("%02d", seed), tree)
		trees = append(trees, tree)
	}
	return trees
}

// treeFiles collects copies of SessionTrees' context and log files, each with
// the context its tree builds, for Pi to read.
type treeFiles struct {
	dir   string
	cases []piCase
	wants []string
}

// add copies tree's context file and log, both to be read at the tree's leaf.
func (f *treeFiles) add(t *testing.T, name string, tree *sessiontree.Tree) {
	t.Helper()
	want := string(tree.BuildContext().JSON())
	leaf, ok := tree.Leaf()
	for _, p := range []string{tree.ContextPath(), tree.LogPath()} {
		cp := filepath.Join(f.dir, name+"-"+filepath.Base(p))
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(cp, data, 0o644))
		f.cases = append(f.cases, piCase{File: cp, Leaf: leaf, NullLeaf: !ok, Out: cp + ".pi.json", SessionDir: filepath.Join(f.dir, "pi-sessions")})
		f.wants = append(f.wants, want)
	}
}

// check has Pi (script in testdata/pioracle, context.mjs for Pi 0.58) read
// every file: the second of each pair (a log, an export) must give its want,
// the first (a context file) the same messages.
func (f *treeFiles) check(t *testing.T, node, script string) {
	t.Helper()
	askPiWith(t, node, script, f.dir, "trees.json", f.cases)
	for i, c := range f.cases {
		got, err := os.ReadFile(c.Out)
		require.NoError(t, err)
		if i%2 == 1 { // the log
			require.Equal(t, f.wants[i], string(got), "%s: Pi's context of the log against the tree's own", c.File)
			continue
		}
		var w, g struct{ Messages []json.RawMessage }
		require.NoError(t, json.Unmarshal([]byte(f.wants[i]), &w))
		require.NoError(t, json.Unmarshal(got, &g), "%s: %s", c.File, got)
		require.Equal(t, w.Messages, g.Messages, "%s: Pi's messages of the context file against the tree's own", c.File)
	}
}

// driveTree appends to tree a seeded mix of what a replica writes, flushing at
// random points, and ends with an assistant message and a flush. With pi16 it
// writes what Pi 1.6 added too (pi16Step): system messages, context edits,
// usage entries.
func driveTree(t *testing.T, ctx context.Context, r *rand.Rand, tree *sessiontree.Tree, pi16 bool) {
	t.Helper()
	var ids []string
	pickID := func() string { return ids[r.IntN(len(ids))] }
	text := func() json.RawMessage {
		b, _ := json.Marshal([]string{"hello", "two\nlines", "unicode é 日本 🎉", `a "quote"`, ""}[r.IntN(5)])
		return b
	}
	assistant := func() json.RawMessage {
		return json.RawMessage(`{"role":"assistant","content":[{"type":"text","text":` + string(text()) +
			`}],"api":"openai-completions","provider":"ollama","model":"qwen3:1.7b","usage":{"input":` + strconv.Itoa(r.IntN(999)) +
			`,"output":3},"stopReason":"stop","timestamp":1790375352000}`)
	}
	user := func() json.RawMessage {
		return json.RawMessage(`{"role":"user","content":` + string(text()) + `,"timestamp":1790375350000}`)
	}
	add := func(e sessiontree.Entry, err error) {
		t.Helper()
		require.NoError(t, err)
		ids = append(ids, e.ID())
	}
	add(tree.AppendMessage(user()))
	add(tree.AppendMessage(assistant()))
	for range 1 + r.IntN(40) {
		k := r.IntN(100)
		if pi16 && pi16Step(t, r, tree, k, add) {
			continue
		}
		switch {
		case k < 25:
			add(tree.AppendMessage(user()))
		case k < 45:
			add(tree.AppendMessage(assistant()))
		case k < 50:
			add(tree.AppendThinkingLevelChange([]string{"off", "low", "high"}[r.IntN(3)]))
		case k < 54:
			add(tree.AppendModelChange("openai", "gpt-5"))
		case k < 62:
			add(tree.AppendCompaction(sessiontree.Compaction{Summary: "summary " + strconv.Itoa(k), FirstKeptEntryID: pickID(), TokensBefore: 100 + r.IntN(9999)}))
		case k < 66:
			add(tree.AppendBranchSummary(pickID(), []string{"", "went elsewhere"}[r.IntN(2)], nil, false))
		case k < 69:
			add(tree.AppendCustom("ext", json.RawMessage(`{"k":[1,2]}`)))
		case k < 74:
			add(tree.AppendCustomMessage("ext-msg", text(), r.IntN(2) == 0, nil))
		case k < 78:
			add(tree.AppendLabel(pickID(), "bookmark"))
		case k < 80:
			add(tree.AppendSessionInfo("my session"))
		case k < 90:
			target := pickID()
			require.NoError(t, tree.Branch(target))
			if r.IntN(2) == 0 {
				_, err := tree.AppendLeaf(target) // recorded; not a parent or target later
				require.NoError(t, err)
			}
		default:
			require.NoError(t, tree.Flush(ctx))
		}
	}
	add(tree.AppendMessage(assistant()))
	require.NoError(t, tree.Flush(ctx))
}

// TestPiOracle_Replicas: replicas of one session behind a load balancer, each a
// SessionTree with its own files, uploading to one store and syncing from it
// between turns. After the last sync and flush, each replica's log gives Pi the
// context the replica builds at its leaf, and its context file the same
// messages; and every replica builds the context `transcript context` reads
// from the store.
func TestPiOracle_Replicas(t *testing.T) {
	testReplicas(t, needPi(t), "context.mjs", false)
}

// testReplicas is TestPiOracle_Replicas with the Pi of script (in
// testdata/pioracle); with pi16 the replicas write what Pi 1.6 added too.
func testReplicas(t *testing.T, node, script string, pi16 bool) {
	dir := t.TempDir()
	ctx := context.Background()
	storeDir := filepath.Join(dir, "store")
	store := fileStore(t, storeDir)
	who := sessiontree.Identity{Namespace: "default"}
	files := &treeFiles{dir: dir}
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 0x7e91))
		sid := fmt.Sprintf("r%02d", seed)
		replicas := make([]*sessiontree.Tree, 3)
		for i := range replicas {
			w, err := transcript.NewWriter(fmt.Sprintf("replica-%d", i))
			require.NoError(t, err)
			cfg := sessiontree.Config{Root: filepath.Join(dir, fmt.Sprintf("replica-%d", i)), NoSync: true,
				Uploader: &mirror.Direct{Store: store, Writer: w}, Store: store}
			if i == 0 {
				replicas[i], err = sessiontree.New(cfg, who, "oracle", sid, sessiontree.HeaderOptions{Cwd: "/work/project"})
				require.NoError(t, err)
				driveTree(t, ctx, r, replicas[i], pi16) // the first turns, flushed
				continue
			}
			replicas[i], _, err = sessiontree.Restore(ctx, cfg, who, "oracle", sid)
			require.NoError(t, err)
		}
		// Turns land on replicas at random; a replica syncs before its turn
		// (sometimes it does not, as a stale one would).
		for range 6 {
			tree := replicas[r.IntN(len(replicas))]
			if r.IntN(4) > 0 {
				_, err := tree.Pull(ctx)
				require.NoError(t, err)
			}
			driveTree(t, ctx, r, tree, pi16)
		}
		sel := []string{"--store", "file://" + storeDir, "--agent", "oracle", "--session", sid}
		stored := oracleCLI(t, append([]string{"context"}, sel...)...)
		require.Equal(t, 0, stored.code, stored.stderr)
		for i, tree := range replicas {
			_, err := tree.Pull(ctx)
			require.NoError(t, err)
			require.NoError(t, tree.Flush(ctx))
			require.Equal(t, stored.stdout, string(tree.BuildContext().JSON())+"\n", "%s: replica %d and the store build one context", sid, i)
			files.add(t, fmt.Sprintf("%s-%d", sid, i), tree)
		}
	}
	files.check(t, node, script)
}
