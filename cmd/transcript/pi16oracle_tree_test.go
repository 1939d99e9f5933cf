package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/transcriptstore/transcript/pi"
	"github.com/transcriptstore/transcript/sessiontree"
)

// TestPi16Oracle_SessionTree: the files a SessionTree writes as it goes, with
// what Pi 1.6 added among its appends (system messages, context edits, usage
// entries, compactions that record the system message), open in Pi 1.6 with
// the context the tree builds: the log gives the whole context, the context
// file, rewritten after each compaction, the same messages (docs/STORAGE.md).
func TestPi16Oracle_SessionTree(t *testing.T) {
	node := needPiPackage(t, pi16Package)
	ctx := context.Background()
	files := &treeFiles{dir: t.TempDir()}
	edits, recorded := 0, 0
	for _, tree := range drivenTrees(t, ctx, files, 0x16, true) {
		for _, e := range tree.Entries() {
			if e.Type() == pi.TypeContextEdit {
				edits++
			}
			if pi.RecordedSystemMessage(e) != nil {
				recorded++
			}
		}
	}
	require.Greater(t, edits, 50)
	require.Greater(t, recorded, 50)
	files.check(t, node, "pi16.mjs")
}

// TestPi16Oracle_Replicas is TestPiOracle_Replicas with Pi 1.6, the replicas
// writing what Pi 1.6 added too.
func TestPi16Oracle_Replicas(t *testing.T) {
	testReplicas(t, needPiPackage(t, pi16Package), "pi16.mjs", true)
}

// pi16Step appends, for some k (driveTree's draw), what Pi 1.6 added: a system
// message, a context edit of an entry on the active branch, a usage entry. It
// reports whether it appended.
func pi16Step(t *testing.T, r *rand.Rand, tree *sessiontree.Tree, k int, add func(sessiontree.Entry, error)) bool {
	t.Helper()
	switch {
	case k < 8:
		sections := []string{`{"cwd":"<cwd>/work</cwd>"}`, `{"rules":null}`, `{"rules":"<rules>be brief</rules>","cwd":"<cwd>/w</cwd>"}`}[r.IntN(3)]
		add(tree.AppendMessage(json.RawMessage(fmt.Sprintf(`{"role":"system","content":%q,"sections":%s,"timestamp":1790375340000}`,
			[]string{"You are Pi.", "", "Use the tools."}[r.IntN(3)], sections))))
	case k >= 25 && k < 33:
		target, ok := editableOnBranch(t, r, tree)
		if !ok {
			return false
		}
		repl := []string{`null`, `{"content":"edited"}`, `{"content":[{"type":"text","text":"edited block"}]}`}[r.IntN(3)]
		add(tree.AppendContextEdit(target, json.RawMessage(repl)))
	case k >= 45 && k < 48:
		add(tree.AppendUsage("cache_warm", "ollama", "qwen3:1.7b", json.RawMessage(`{"input":10,"output":1}`), ""))
	default:
		return false
	}
	return true
}

// editableOnBranch picks an entry of the active branch a context edit may name.
func editableOnBranch(t *testing.T, r *rand.Rand, tree *sessiontree.Tree) (string, bool) {
	t.Helper()
	leaf, ok := tree.Leaf()
	if !ok {
		return "", false
	}
	path, err := tree.PathToRoot(leaf)
	require.NoError(t, err)
	var ids []string
	for _, e := range path {
		if role := e.Role(); e.Type() == pi.TypeCustomMessage || role == "user" || role == "assistant" || role == "toolResult" {
			ids = append(ids, e.ID())
		}
	}
	if len(ids) == 0 {
		return "", false
	}
	return ids[r.IntN(len(ids))], true
}
