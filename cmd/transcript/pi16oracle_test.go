package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
	"github.com/transcriptstore/transcript/transcript/bucket/filebucket"
)

// Pi 1.6 as the oracle
//
// TestPi16Oracle has Pi 1.6 (@earendil-works/pi-coding-agent, pinned in
// testdata/pioracle beside Pi 0.58) write 400 sessions through its own
// SessionManager from seeded random operations (testdata/pioracle/pi16.mjs:
// every append method, branches with and without a summary, leaf resets,
// context edits, system messages, compactions with a system message current),
// open each file again and build its context at the last entry and at up to
// four other entries. The store must build exactly that context at each of
// them: with `transcript context --file`; with a SessionTree that imported the
// file, and one that loaded the files that tree's Flush wrote; after a round
// trip through the store (`transcript import` of a first part of the file, then
// of all of it, Store.Compact, `transcript export`), with `transcript context`
// reading the store, a SessionTree restored from the store before the second
// import and synced after the compaction, and one restored after it. Pi 1.6
// reads the export and the SessionTree's context file again: the export gives
// the same context, the context file the same messages.

// pi16Package is Pi 1.6's npm package, installed in oracleDir.
const pi16Package = "@earendil-works/pi-coding-agent"

// fileStore opens a store on the directory dir (the command line reaches it
// as file://dir); it is closed when the test ends.
func fileStore(t *testing.T, dir string) *transcript.Store {
	t.Helper()
	b, err := filebucket.New(dir)
	require.NoError(t, err)
	s, err := transcript.New(transcript.Config{Bucket: b})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// pi16Session is a session Pi 1.6 wrote, with the context Pi builds for the file
// at some of its entries (Leaf "" for the last one).
type pi16Session struct {
	File   string `json:"file"`
	Checks []struct {
		Leaf    string `json:"leaf"`
		Context string `json:"context"`
	} `json:"checks"`
}

func TestPi16Oracle(t *testing.T) {
	node := needPiPackage(t, pi16Package)
	ctx := context.Background()
	dir := t.TempDir()
	sessions := pi16Make(t, node, dir, 400, 20261201)
	requirePi16Variety(t, sessions)
	storeDir := filepath.Join(dir, "store")
	store := fileStore(t, storeDir)

	var mu sync.Mutex
	files := &treeFiles{dir: dir}
	t.Run("sessions", func(t *testing.T) {
		for i, s := range sessions {
			t.Run(fmt.Sprintf("%03d", i), func(t *testing.T) {
				t.Parallel()
				o := pi16Check{dir: dir, name: fmt.Sprintf("%03d", i), s: s}
				o.file(t)
				treeFile := o.sessionTree(t, ctx)
				export := o.storeTrip(t, ctx, store, storeDir)
				mu.Lock()
				defer mu.Unlock()
				files.cases = append(files.cases,
					piCase{File: treeFile, Out: treeFile + ".pi.json", SessionDir: filepath.Join(dir, "pi-sessions")},
					piCase{File: export, Out: export + ".pi.json", SessionDir: filepath.Join(dir, "pi-sessions")})
				files.wants = append(files.wants, s.Checks[0].Context, s.Checks[0].Context)
			})
		}
	})
	if t.Failed() {
		return
	}
	files.check(t, node, "pi16.mjs")
}

// pi16Check checks one session Pi 1.6 wrote.
type pi16Check struct {
	dir, name string
	s         pi16Session
}

// want returns Pi's context at check k and that check's leaf (nil for the last
// entry).
func (o *pi16Check) want(k int) (string, *string) {
	c := o.s.Checks[k]
	if c.Leaf == "" {
		return c.Context, nil
	}
	return c.Context, &c.Leaf
}

// file: `transcript context --file` at every check.
func (o *pi16Check) file(t *testing.T) {
	for k := range o.s.Checks {
		want, leaf := o.want(k)
		args := []string{"context", "--file", o.s.File}
		if leaf != nil {
			args = append(args, "--leaf", *leaf)
		}
		r := oracleCLI(t, args...)
		require.Equal(t, 0, r.code, "%s: %s", o.s.File, r.stderr)
		require.Equal(t, want+"\n", r.stdout, "%s: transcript context --file, leaf %q: the context Pi 1.6 builds", o.s.File, o.s.Checks[k].Leaf)
	}
}

// requireTree requires tree to build Pi's context at every check (how names
// the tree in a failure).
func (o *pi16Check) requireTree(t *testing.T, tree *sessiontree.Tree, how string) {
	t.Helper()
	for k := range o.s.Checks {
		want, leaf := o.want(k)
		got := tree.BuildContext()
		if leaf != nil {
			got = tree.BuildContextAt(*leaf)
		}
		require.Equal(t, want, string(got.JSON()), "%s: a SessionTree %s, at %q: the context Pi 1.6 builds", o.s.File, how, o.s.Checks[k].Leaf)
	}
}

// sessionTree: a SessionTree that imports the file, and one that loads the
// files its Flush writes. It returns a copy of the tree's context file, for Pi.
func (o *pi16Check) sessionTree(t *testing.T, ctx context.Context) string {
	data, err := os.ReadFile(o.s.File)
	require.NoError(t, err)
	who := sessiontree.Identity{Namespace: "default"}
	cfg := sessiontree.Config{Root: filepath.Join(o.dir, "trees", o.name), NoSync: true}
	tree, rep, err := sessiontree.Import(cfg, who, "oracle", "s"+o.name, bytes.NewReader(data))
	require.NoError(t, err)
	require.True(t, rep.Clean(), "%s: %+v", o.s.File, rep)
	o.requireTree(t, tree, "that imported the file")
	require.NoError(t, tree.Flush(ctx))

	loaded, rep, err := sessiontree.Load(ctx, cfg, who, "oracle", "s"+o.name)
	require.NoError(t, err)
	require.True(t, rep.Clean(), "%s: %+v", o.s.File, rep)
	// The context file holds what the model needs at the active leaf; the
	// other entries are in the log.
	want, _ := o.want(0)
	require.Equal(t, want, string(loaded.BuildContext().JSON()), "%s: a SessionTree loaded from its files: the context Pi 1.6 builds", o.s.File)
	_, err = loaded.MergeLog(ctx)
	require.NoError(t, err)
	o.requireTree(t, loaded, "loaded from its files")

	cp := filepath.Join(o.dir, o.name+"-tree-context.jsonl")
	ctxFile, err := os.ReadFile(tree.ContextPath())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cp, ctxFile, 0o644))
	return cp
}

// storeTrip: the session through the store. It returns the export's path.
func (o *pi16Check) storeTrip(t *testing.T, ctx context.Context, store *transcript.Store, storeDir string) string {
	sid := "s" + o.name
	sel := []string{"--store", "file://" + storeDir, "--agent", "oracle", "--session", sid}
	data, err := os.ReadFile(o.s.File)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	first := filepath.Join(o.dir, o.name+"-first.jsonl")
	require.NoError(t, os.WriteFile(first, []byte(strings.Join(lines[:1+(len(lines)-1)/2], "")), 0o644))
	importFile := func(f string) {
		r := oracleCLI(t, append(append([]string{"import"}, sel...), f)...)
		require.Equal(t, 0, r.code, "%s: import: %s", f, r.stderr)
	}
	importFile(first)
	synced := o.restore(t, ctx, store, "synced") // a replica that restored the first part
	importFile(o.s.File)
	ref := transcript.TranscriptRef{Namespace: "default", AgentID: "oracle", SessionID: sid}
	res, err := store.Compact(ctx, ref, transcript.CompactOptions{MinSegments: 2, DeleteDelay: transcript.DeleteAtOnce})
	require.NoError(t, err)
	require.NotEmpty(t, res.Compactions, "%s: two imports make two segments to compact", o.s.File)
	_, err = synced.Pull(ctx)
	require.NoError(t, err)
	o.requireTree(t, synced, "restored from the store and synced")
	o.requireTree(t, o.restore(t, ctx, store, "restored"), "restored from the store")

	for k := range min(2, len(o.s.Checks)) {
		want, leaf := o.want(k)
		args := append([]string{"context"}, sel...)
		if leaf != nil {
			args = append(args, "--leaf", *leaf)
		}
		r := oracleCLI(t, args...)
		require.Equal(t, 0, r.code, "%s: %s", o.s.File, r.stderr)
		require.Equal(t, want+"\n", r.stdout, "%s: transcript context from the store, leaf %q: the context Pi 1.6 builds", o.s.File, o.s.Checks[k].Leaf)
	}
	export := filepath.Join(o.dir, o.name+"-export.jsonl")
	r := oracleCLI(t, append([]string{"export", "--out", export}, sel...)...)
	require.Equal(t, 0, r.code, "%s: export: %s", o.s.File, r.stderr)
	f, err := os.Open(export)
	require.NoError(t, err)
	defer f.Close()
	_, entries, rep, err := sessiontree.ParseSession(f)
	require.NoError(t, err)
	require.True(t, rep.Clean())
	for k := range o.s.Checks {
		want, leaf := o.want(k)
		require.Equal(t, want, string(pi.BuildContextFrom(entries, leaf).JSON()), "%s: its export, at %q: the context Pi 1.6 builds", o.s.File, o.s.Checks[k].Leaf)
	}
	return export
}

// restore restores the session from store into a new root named by how.
func (o *pi16Check) restore(t *testing.T, ctx context.Context, store *transcript.Store, how string) *sessiontree.Tree {
	cfg := sessiontree.Config{Root: filepath.Join(o.dir, how, o.name), NoSync: true, Store: store}
	tree, rep, err := sessiontree.Restore(ctx, cfg, sessiontree.Identity{Namespace: "default"}, "oracle", "s"+o.name)
	require.NoError(t, err)
	require.Empty(t, rep.Conflicts)
	return tree
}

// pi16Make has Pi 1.6 write n sessions under dir (testdata/pioracle/pi16.mjs)
// and returns them with Pi's contexts.
func pi16Make(t *testing.T, node, dir string, n int, seed int) []pi16Session {
	t.Helper()
	script, err := filepath.Abs(filepath.Join(oracleDir, "pi16.mjs"))
	require.NoError(t, err)
	out := filepath.Join(dir, "pi16-sessions.json")
	cmd := exec.Command(node, script, "make", strconv.Itoa(n), strconv.Itoa(seed), filepath.Join(dir, "pi-made"), out)
	cmd.Dir = oracleDir
	cmd.Env = append(os.Environ(), oracleTZ)
	msg, err := cmd.CombinedOutput()
	require.NoError(t, err, "Pi 1.6: %s", msg)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	var sessions []pi16Session
	require.NoError(t, json.Unmarshal(data, &sessions))
	require.Len(t, sessions, n)
	return sessions
}

// requirePi16Variety requires the sessions to hold what the rules of Pi 1.6
// are about: branches, context edits, system messages, and two or more
// compactions on one path; and a context at a checked entry that an edit
// changes, and one that starts with the system message a compaction recorded.
func requirePi16Variety(t *testing.T, sessions []pi16Session) {
	t.Helper()
	count := map[string]int{}
	for _, s := range sessions {
		data, err := os.ReadFile(s.File)
		require.NoError(t, err)
		_, entries, _, err := sessiontree.ParseSession(bytes.NewReader(data))
		require.NoError(t, err)
		seen := map[string]bool{}
		for _, e := range entries {
			switch {
			case e.Type() == pi.TypeContextEdit:
				seen["context edits"] = true
			case e.Role() == "system":
				seen["system messages"] = true
			}
		}
		if len(pi.BranchPoints(entries)) > 0 {
			seen["branches"] = true
		}
		if path, ok := pi.PathToRoot(entries, pi.NewIndex(entries), pi.ActiveLeafID(entries)); ok {
			n := 0
			for _, e := range path {
				if e.Type() == pi.TypeCompaction {
					n++
				}
			}
			seen["two compactions on the active path"] = n >= 2
		}
		for _, c := range s.Checks {
			var ctx struct{ Messages []struct{ Role string } }
			require.NoError(t, json.Unmarshal([]byte(c.Context), &ctx))
			if len(ctx.Messages) > 1 && ctx.Messages[0].Role == "system" && ctx.Messages[1].Role == "compactionSummary" {
				seen["contexts starting with a recorded system message"] = true
			}
		}
		for k := range seen {
			if seen[k] {
				count[k]++
			}
		}
	}
	t.Logf("Pi 1.6 sessions: %d, with %v", len(sessions), count)
	for _, k := range []string{"context edits", "system messages", "branches", "two compactions on the active path", "contexts starting with a recorded system message"} {
		require.GreaterOrEqual(t, count[k], len(sessions)/8, "sessions with %s", k)
	}
}

// holdsPi16Entries reports whether a session file holds an entry type or field
// that Pi 1.6 added (docs/ENTRIES.md): a context_edit or usage entry, a
// compaction's systemMessage, a system message.
func holdsPi16Entries(t *testing.T, data []byte) bool {
	t.Helper()
	_, entries, _, err := sessiontree.ParseSession(bytes.NewReader(data))
	require.NoError(t, err)
	for _, e := range entries {
		if e.Type() == pi.TypeContextEdit || e.Type() == pi.TypeUsage || e.Role() == "system" ||
			e.Type() == pi.TypeCompaction && bytes.Contains(e.Raw(), []byte(`"systemMessage"`)) {
			return true
		}
	}
	return false
}

// TestPi16Oracle_Fixtures: the sessions of sessiontree/testdata give Pi 1.6's
// context with `transcript context --file`, at the last entry and, in a version
// 3 file (whose ids Pi keeps), at every entry.
func TestPi16Oracle_Fixtures(t *testing.T) {
	node := needPiPackage(t, pi16Package)
	dir := t.TempDir()
	fixtures, err := filepath.Glob("../../sessiontree/testdata/pi-*.jsonl")
	require.NoError(t, err)
	require.NotEmpty(t, fixtures)
	var cases []piCase
	var ours []string
	for _, f := range fixtures {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		_, entries, _, err := sessiontree.ParseSession(bytes.NewReader(data))
		require.NoError(t, err)
		first, _, _ := bytes.Cut(data, []byte("\n"))
		h, err := pi.ParseHeader(first)
		require.NoError(t, err)
		leaves := []string{""}
		if h.Version() == 3 { // ParseSession gave an older file's entries new ids
			for _, e := range entries {
				leaves = append(leaves, e.ID())
			}
		}
		for i, leaf := range leaves {
			name := fmt.Sprintf("%s-%d", filepath.Base(f), i)
			c := piCase{File: filepath.Join(dir, name), Leaf: leaf, Out: filepath.Join(dir, name+".pi.json"), SessionDir: filepath.Join(dir, "pi-sessions")}
			require.NoError(t, os.WriteFile(c.File, data, 0o644)) // Pi migrates a v1 file in place
			cases = append(cases, c)
			ours = append(ours, f)
		}
	}
	askPiWith(t, node, "pi16.mjs", dir, "fixtures.json", cases)
	for i, c := range cases {
		want, err := os.ReadFile(c.Out)
		require.NoError(t, err)
		args := []string{"context", "--file", ours[i]}
		if c.Leaf != "" {
			args = append(args, "--leaf", c.Leaf)
		}
		r := oracleCLI(t, args...)
		require.Equal(t, 0, r.code, r.stderr)
		require.Equal(t, string(want)+"\n", r.stdout, "%s at %q: the context Pi 1.6 builds", ours[i], c.Leaf)
	}
}
