package archtest_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/transcriptstore/transcript/"

// allowed maps a package prefix (relative to the module) to the project packages it
// may import (prefixes too); the first entry whose prefix matches a package is its
// rule, so the more specific entries come first. It follows DESIGN.md's package list,
// where a package imports only packages below it (TestTableFollowsDesign checks that),
// and is stricter where DESIGN.md's prose is: pi, the Pi session model, imports no
// storage package; segment and the internal helpers import nothing of the project.
var allowed = []struct {
	pkg  string
	deps []string
}{
	{"cmd/", []string{""}},
	{"internal/cli", []string{"transcript"}},
	// The one place that wires the follower's ports to the mirror and the store.
	{"internal/followmirror", []string{"follow", "mirror", "sessiontree", "transcript"}},
	// The reliability suite tests everything from outside, like a command.
	{"internal/reliability", []string{""}},
	{"internal/churntest", []string{"transcript"}},
	{"internal/s3test", []string{"transcript", "internal/rclone"}},
	// mirror implements sessiontree's Uploader port; nothing but commands and
	// tests imports it, so the server does not link it.
	{"mirror", []string{"sessiontree", "transcript", "pi", "segment", "internal/fsutil", "internal/jsonscan"}},
	// server is the HTTP API over repository, used by commands.
	{"server", []string{"repository", "sessiontree", "transcript", "pi", "segment", "internal/fsutil", "internal/jsonscan"}},
	{"repository", []string{"sessiontree", "transcript", "pi", "segment", "internal/fsutil", "internal/jsonscan"}},
	// follow declares the ports it needs (an uploader, a store reader) and is
	// wired to the mirror and the store by the command.
	{"follow", []string{"transcript", "pi", "segment", "internal/fsutil", "internal/jsonscan"}},
	{"sessiontree", []string{"transcript", "pi", "segment", "internal/fsutil", "internal/jsonscan"}},
	{"transcript/bucketurl", []string{"transcript/bucket", "internal/fsutil"}},
	{"transcript/bucket/buckettest", []string{"transcript/bucket"}},
	{"transcript/bucket/faultbucket", []string{"transcript/bucket"}},
	{"transcript/bucket/metricbucket", []string{"transcript/bucket"}},
	{"transcript/bucket", []string{"transcript/bucket", "segment", "internal/fsutil", "internal/jsonscan"}},
	{"transcript", []string{"pi", "transcript/bucket", "segment", "internal/fsutil", "internal/jsonscan"}},
	{"pi", []string{"internal/jsonscan"}},
	{"segment", nil},
	{"internal/fsutil", nil},
	{"internal/jsonscan", nil},
	{"internal/rclone", nil},
	{"internal/archtest", nil},
}

// designOrder returns the packages of DESIGN.md's package list, top to bottom.
func designOrder(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("../../DESIGN.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(data), "## Packages")
	require.True(t, ok, "DESIGN.md has no Packages section")
	_, rest, ok = strings.Cut(rest, "```\n")
	require.True(t, ok)
	block, _, ok := strings.Cut(rest, "```")
	require.True(t, ok)
	var pkgs []string
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		names, _, _ := strings.Cut(strings.TrimSpace(line), "   ")
		for _, n := range strings.Split(names, ", ") {
			pkgs = append(pkgs, strings.TrimSuffix(strings.TrimSpace(n), "/"))
		}
	}
	return pkgs
}

// position returns the index in order of the package pkg belongs to: the longest
// listed name equal to pkg or a prefix of it.
func position(order []string, pkg string) int {
	best, at := -1, -1
	for i, n := range order {
		if (pkg == n || strings.HasPrefix(pkg, n+"/")) && len(n) > best {
			best, at = len(n), i
		}
	}
	return at
}

// TestTableFollowsDesign checks that every package DESIGN.md lists has a rule, every
// rule names a listed package, and no rule lets a package import one listed above it.
func TestTableFollowsDesign(t *testing.T) {
	order := designOrder(t)
	require.Greater(t, len(order), 10)
	for _, n := range order {
		found := false
		for _, a := range allowed {
			if n == a.pkg || strings.HasPrefix(n, strings.TrimSuffix(a.pkg, "/")+"/") {
				found = true
				break
			}
		}
		require.True(t, found, "DESIGN.md lists %s, which has no layering rule", n)
	}
	for _, a := range allowed {
		if a.pkg == "internal/archtest" { // holds only tests of the layering itself
			continue
		}
		at := position(order, strings.TrimSuffix(a.pkg, "/"))
		if a.pkg == "cmd/" {
			at = position(order, "cmd/transcript")
		}
		require.GreaterOrEqual(t, at, 0, "rule for %s: not in DESIGN.md's package list", a.pkg)
		for _, d := range a.deps {
			if d == "" {
				continue // commands and the outside-in suite may import anything
			}
			dat := position(order, d)
			require.GreaterOrEqual(t, dat, 0, "rule for %s allows %s, which DESIGN.md does not list", a.pkg, d)
			require.True(t, dat > at || d == a.pkg,
				"rule for %s allows %s, listed above it in DESIGN.md", a.pkg, d)
		}
	}
}

func TestLayers(t *testing.T) {
	checked := 0
	for _, p := range goList(t, "ImportPath,Imports", module+"...") {
		rel := strings.TrimPrefix(p.ImportPath, module)
		var rule []string
		found := false
		for _, a := range allowed {
			if rel == a.pkg || strings.HasPrefix(rel, strings.TrimSuffix(a.pkg, "/")+"/") {
				rule, found = a.deps, true
				break
			}
		}
		require.True(t, found, "package %s has no layering rule", rel)
		checked++
		for _, imp := range p.Imports {
			dep, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			ok := false
			for _, r := range rule {
				if r == "" || dep == r || strings.HasPrefix(dep, r+"/") {
					ok = true
				}
			}
			require.True(t, ok, "%s imports %s, against the layering of DESIGN.md", rel, dep)
		}
	}
	require.Greater(t, checked, 5)
}
