package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/mirror"
	"github.com/transcriptstore/transcript/sessiontree"
	"github.com/transcriptstore/transcript/transcript"
)

// TestPiOracle_SessionTreeCycles: a SessionTree that pulls entries forming a
// parent cycle keeps them in its log (its own record) and leaves them out of
// its context file, Pi's file, also when a later pull closes the cycle
// through an entry the file already holds (the file is rewritten then); a tree
// loaded from the files has the same active leaf and writes nothing new;
// `restore` (the sessiontree layout) writes the same two files. Pi 0.58 and
// Pi 1.6 open each context file within a time limit, at its leaf and at each
// of its entries, and build the context `transcript context --file` builds.
func TestPiOracle_SessionTreeCycles(t *testing.T) {
	node := needPiPackage(t, "@mariozechner/pi-coding-agent")
	needPiPackage(t, "@earendil-works/pi-coding-agent")
	ctx := t.Context()
	dir := t.TempDir()
	store := "file://" + filepath.Join(dir, "bucket")
	s := openStoreAt(t, store)
	hostile, err := transcript.NewWriter("hostile")
	require.NoError(t, err)
	who := sessiontree.Identity{Namespace: transcript.DefaultNamespace}

	tests := []struct {
		name string
		// rounds are what a hostile writer stores before each pull (one
		// segment per string, "id:parent" entries, "@u" naming the tree's
		// first entry); local appends a user and an assistant message after
		// the last pull.
		rounds [][]string
		local  bool
		cycle  string
	}{
		{"2-cycle in one pull", [][]string{{"ca:cb", "cb:ca kid:ca", "dup:@u"}}, false, "ca cb"},
		{"a later pull closes the cycle through a written entry", [][]string{{"ca:cb kid:ca"}, {"cb:ca"}}, false, "ca cb"},
		{"self-parent with a child", [][]string{{"self:self sk:self"}}, false, "self"},
		{"3-cycle over three pulls", [][]string{{"c1:c3"}, {"c2:c1"}, {"c3:c2 k:c2"}}, false, "c1 c2 c3"},
		{"local turns after the cycle", [][]string{{"ca:cb", "cb:ca"}}, true, "ca cb"},
		{"the cycle's descendants only, then local turns", [][]string{{"ca:cb kid:ca", "cb:ca x:@u"}}, true, "ca cb"},
	}
	var asks piAsks
	for n, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := fmt.Sprintf("tc%d", n)
			root := filepath.Join(dir, "replica")
			w, err := transcript.NewWriter("replica")
			require.NoError(t, err)
			cfg := sessiontree.Config{Root: root, Uploader: &mirror.Direct{Store: s, Writer: w}, Store: s, NoSync: true}
			tree, _, err := sessiontree.Open(ctx, cfg, who, "agent", id, sessiontree.HeaderOptions{Cwd: "/work"})
			require.NoError(t, err)
			u, err := tree.AppendMessage(json.RawMessage(`{"role":"user","content":"hi","timestamp":1}`))
			require.NoError(t, err)
			_, err = tree.AppendMessage(json.RawMessage(`{"role":"assistant","content":[{"type":"text","text":"yo"}],"provider":"p","model":"m","timestamp":2}`))
			require.NoError(t, err)
			require.NoError(t, tree.Flush(ctx))
			for _, round := range tt.rounds {
				for _, seg := range round {
					var batch [][]byte
					for _, l := range strings.Fields(strings.ReplaceAll(seg, "@u", u.ID())) {
						eid, parent, _ := strings.Cut(l, ":")
						batch = append(batch, []byte(messageLine(eid, parent, "text of "+eid)))
					}
					_, err := s.AppendSegment(ctx, tree.Ref(), batch, hostile)
					require.NoError(t, err)
				}
				_, err := tree.Pull(ctx)
				require.NoError(t, err)
				require.NoError(t, tree.Flush(ctx))
			}
			if tt.local {
				_, err = tree.AppendMessage(json.RawMessage(`{"role":"user","content":"again","timestamp":3}`))
				require.NoError(t, err)
				_, err = tree.AppendMessage(json.RawMessage(`{"role":"assistant","content":[{"type":"text","text":"ok"}],"provider":"p","model":"m","timestamp":4}`))
				require.NoError(t, err)
				require.NoError(t, tree.Flush(ctx))
			}
			cycle := strings.Fields(tt.cycle)
			checkFiles := func(t *testing.T, files sessiontree.Files) {
				t.Helper()
				logIDs := fileIDs(t, files.Log)
				for _, e := range tree.Entries() {
					assert.Contains(t, logIDs, e.ID(), "the log holds every entry")
				}
				ctxIDs := fileIDs(t, files.Context)
				for _, c := range cycle {
					assert.NotContains(t, ctxIDs, c, "the context file leaves out the entries on the cycle")
				}
				assert.Len(t, ctxIDs, tree.Len()-len(cycle), "and holds every other entry")
			}
			checkFiles(t, sessiontree.FilesOf(root, tree.Ref()))

			// Loaded again, the tree writes nothing new.
			files := sessiontree.FilesOf(root, tree.Ref())
			before := readFiles(t, files)
			again, _, err := sessiontree.Load(ctx, sessiontree.Config{Root: root, Store: s, NoSync: true}, who, "agent", id)
			require.NoError(t, err)
			wantLeaf, _ := tree.Leaf()
			gotLeaf, _ := again.Leaf()
			assert.Equal(t, wantLeaf, gotLeaf, "a loaded tree's active leaf, which the context file may lack")
			_, err = again.MergeLog(ctx)
			require.NoError(t, err)
			_, err = again.Pull(ctx)
			require.NoError(t, err)
			require.NoError(t, again.Flush(ctx))
			assert.Equal(t, before, readFiles(t, files), "a loaded tree rewrites nothing")

			out := filepath.Join(dir, "restored-"+id)
			r := cli(t, "restore", "--out", out, "--store", store, "--agent", "agent", "--session", id)
			require.Equal(t, 0, r.code, r.stdout+r.stderr)
			restored := sessiontree.FilesOf(out, tree.Ref())
			checkFiles(t, restored)

			for _, file := range []string{files.Context, restored.Context} {
				data, err := os.ReadFile(file)
				require.NoError(t, err)
				asks.addFile(t, file, data, dir)
			}
		})
	}
	asks.requireBothPisBuild(t, node, dir, "tree-cycles")
}

// piAsks are the contexts to ask Pi for, each with what transcript context
// --file builds for it.
type piAsks struct {
	cases []piCase
	wants []string
}

// addFile asks for the session file at path (its bytes data) at its leaf and at
// each of its entries.
func (a *piAsks) addFile(t *testing.T, path string, data []byte, dir string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	for _, leaf := range append([]string{""}, lineIDs(t, lines[1:])...) {
		args := []string{"context", "--file", path}
		if leaf != "" {
			args = append(args, "--leaf", leaf)
		}
		a.wants = append(a.wants, strings.TrimSpace(oracleCLIOK(t, args...)))
		a.cases = append(a.cases, piCase{File: path, Leaf: leaf, SessionDir: filepath.Join(dir, "pi-sessions")})
	}
}

// requireBothPisBuild has Pi 0.58 and Pi 1.6 (context.mjs, pi16.mjs) build
// each context asked for, within a time limit (askPiWithin), and requires it to
// be what transcript context --file built. name tells the runs' files apart.
func (a *piAsks) requireBothPisBuild(t *testing.T, node, dir, name string) {
	t.Helper()
	require.NotEmpty(t, a.cases)
	for _, script := range []string{"context.mjs", "pi16.mjs"} {
		for i := range a.cases {
			a.cases[i].Out = filepath.Join(dir, fmt.Sprintf("%s-%s-%d.json", name, script, i))
		}
		askPiWithin(t, node, script, dir, script+"-"+name+".json", a.cases, 30*time.Second)
		for i, c := range a.cases {
			got, err := os.ReadFile(c.Out)
			require.NoError(t, err)
			require.Equal(t, a.wants[i], string(got), "%s: %s at %q", script, c.File, c.Leaf)
		}
	}
}

// fileIDs returns the ids of the entry lines of the session file at path.
func fileIDs(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	return lineIDs(t, lines[1:])
}

// readFiles returns the bytes of the context file and the log of files.
func readFiles(t *testing.T, files sessiontree.Files) [2]string {
	t.Helper()
	var out [2]string
	for k, p := range []string{files.Context, files.Log} {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		out[k] = string(data)
	}
	return out
}

// oracleCLIOK is oracleCLI that requires exit code 0, returning stdout.
func oracleCLIOK(t *testing.T, args ...string) string {
	t.Helper()
	r := oracleCLI(t, args...)
	require.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
	return r.stdout
}

// lineIDs returns the ids of the entry lines.
func lineIDs(t *testing.T, lines []string) []string {
	t.Helper()
	var ids []string
	for _, l := range lines {
		var e struct{ ID string }
		require.NoError(t, json.Unmarshal([]byte(l), &e))
		ids = append(ids, e.ID)
	}
	return ids
}

// askPiWithin is askPiWith under a time limit: Pi that loops (Pi 0.58 on a
// parent cycle spins and ignores SIGTERM) is killed, and the test fails
// instead of hanging.
func askPiWithin(t *testing.T, node, script, dir, name string, cases []piCase, limit time.Duration) {
	t.Helper()
	list, err := json.Marshal(cases)
	require.NoError(t, err)
	listFile := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(listFile, list, 0o644))
	abs, err := filepath.Abs(filepath.Join(oracleDir, script))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, abs, "context", listFile) // killed with SIGKILL
	cmd.Dir = oracleDir
	cmd.Env = append(os.Environ(), oracleTZ)
	cmd.WaitDelay = time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("Pi (%s) did not answer within %v: it loops on a file: %s", script, limit, outputTail(out.String()))
	}
	require.NoError(t, err, "Pi (%s): %s", script, outputTail(out.String()))
}

// outputTail is the end of s, for a message.
func outputTail(s string) string {
	if len(s) > 2000 {
		return "…" + s[len(s)-2000:]
	}
	return s
}
