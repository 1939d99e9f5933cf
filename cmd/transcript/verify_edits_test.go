package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestVerify_ContextEdits: verify names each context edit whose target is not
// an entry before it on its branch, that edits nothing, or that has no
// replacement; a session whose edits are all in place has no problem.
func TestVerify_ContextEdits(t *testing.T) {
	store := "file://" + filepath.Join(t.TempDir(), "store")
	line := func(typ, id, parent, extra string) string {
		p := "null"
		if parent != "" {
			p = fmt.Sprintf("%q", parent)
		}
		return fmt.Sprintf(`{"type":%q,"id":%q,"parentId":%s,"timestamp":"2026-01-01T00:00:00.000Z",%s}`, typ, id, p, extra)
	}
	user := func(id, parent string) string {
		return line("message", id, parent, `"message":{"role":"user","content":"`+id+`"}`)
	}
	edit := func(id, parent, target, replacement string) string {
		if replacement != "" {
			replacement = `,"replacement":` + replacement
		}
		return line("context_edit", id, parent, `"targetId":`+target+replacement)
	}
	add := func(session string, lines ...string) {
		t.Helper()
		header := fmt.Sprintf(`{"type":"session","version":3,"id":%q,"timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}`, session)
		lines = append([]string{header}, lines...)
		r := cliWith(t, cmdOpts{stdin: strings.Join(lines, "\n") + "\n"}, "append", "--store", store, "--agent", "a", "--session", session)
		require.Equal(t, 0, r.code, r.stderr)
	}
	add("good", user("a", ""), user("b", "a"), edit("e1", "b", `"a"`, `{"content":"x"}`), edit("e2", "e1", `"b"`, `null`))
	require.Contains(t, ok(t, "verify", "--store", store), "0 problems in 1 segment of 1 session")

	// a has two branches, b and c.
	add("bad", user("a", ""), user("b", "a"), user("c", "a"),
		edit("e1", "b", `"a"`, `{"content":"x"}`), // in place
		edit("e2", "b", `"c"`, `null`),            // c is on another branch
		edit("e3", "b", `"gone"`, `null`),         // no such entry
		edit("e4", "c", `"c"`, ``),                // no replacement
		edit("e5", "e1", `"e5"`, `null`),          // itself
		edit("e6", "e1", `7`, `null`),             // a target that is not a string
	)
	r := cli(t, "verify", "--store", store, "--session", "bad", "--agent", "a")
	require.Equal(t, 1, r.code, r.stderr)
	for _, want := range []string{
		"context edit e2 edits c, which is not on its branch",
		"context edit e3 edits gone, which no segment holds",
		"context edit e4 has no replacement",
		"context edit e5 edits e5, which is not on its branch",
		"context edit e6 has no string targetId",
	} {
		require.Contains(t, r.stdout, want)
	}
	require.NotContains(t, r.stdout, "context edit e1")
	require.Contains(t, r.stdout, "5 problems in 1 segment of 1 session")
}

// TestEulerTour: the ancestor test verify uses, on a tree with two roots, a
// branch and a parent cycle (whose entries no root reaches).
func TestEulerTour(t *testing.T) {
	// 0 ← 1 ← 2, 1 ← 3; 4 a root; 5 ⇄ 6.
	parents := []int32{-1, 0, 1, 1, -1, 6, 5}
	in, out := eulerTour(len(parents), func(k int32) (int32, bool) { return parents[k], parents[k] >= 0 })
	anc := func(a, b int) bool { return in[a] >= 0 && in[b] >= 0 && in[a] < in[b] && out[b] <= out[a] }
	for _, tt := range []struct {
		a, b int
		want bool
	}{
		{0, 2, true}, {1, 3, true}, {0, 3, true}, {2, 3, false}, {3, 2, false},
		{2, 0, false}, {2, 2, false}, {4, 2, false}, {0, 4, false}, {5, 6, false},
	} {
		require.Equal(t, tt.want, anc(tt.a, tt.b), "%d an ancestor of %d", tt.a, tt.b)
	}
	require.Equal(t, int32(-1), in[5])
	require.Equal(t, int32(-1), in[6])
}
