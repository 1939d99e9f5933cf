package archtest_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/transcriptstore/transcript/"

// allowed maps a package prefix (relative to the module) to the project packages it
// may import (prefixes too), and to those it may import only to name their
// sentinel errors (exact packages; TestSentinelOnlyImports checks that every use is
// an Err identifier); the first entry whose prefix matches a package is its rule,
// so the more specific entries come first. It follows DESIGN.md's package list,
// where a package imports only packages below it (TestTableFollowsDesign checks
// that), and is stricter where DESIGN.md's prose is: each layer reaches the store
// only through the one below it (the server through repository, the repository
// through transcript), pi, the Pi session model, imports no storage package, and
// segment and the internal helpers import nothing of the project. A sentinel is
// declared once, by the package where its meaning arises, so a layer that tests an
// error of a lower one names it there.
var allowed = []struct {
	pkg       string
	deps      []string
	sentinels []string
}{
	// Commands may use every library, but each binary only what it is for: the
	// server's binary reaches the store through server and repository alone.
	// (It wraps the bucket with its metrics, so it names the bucket's types.)
	{pkg: "cmd/transcript-serve", deps: []string{"internal/cli", "server", "repository", "transcript/bucketurl", "transcript/bucket"}},
	{pkg: "cmd/transcript-compact", deps: []string{"internal/cli", "transcript", "segment"}},
	{pkg: "cmd/transcript-bench", deps: []string{""}}, // it measures every layer
	{pkg: "cmd/transcript", deps: []string{"internal/cli", "internal/fsutil", "internal/jsonscan", "internal/followmirror", "follow", "sessiontree", "mirror", "transcript", "pi", "segment"}},
	{pkg: "internal/cli", deps: []string{"transcript"}},
	// The one place that wires the follower's ports to the mirror and the store.
	{pkg: "internal/followmirror", deps: []string{"follow", "mirror", "sessiontree", "transcript", "transcript/bucket", "pi"}},
	// Shipped (the bench links it), though benchmarks share it too.
	{pkg: "internal/benchkit", deps: []string{"transcript", "internal/jsonscan"}},
	// The reliability suite tests everything from outside, like a command.
	{pkg: "internal/reliability", deps: []string{""}},
	{pkg: "internal/churntest", deps: []string{"transcript"}},
	{pkg: "internal/s3test", deps: []string{"transcript", "internal/rclone"}},
	// mirror implements sessiontree's Uploader port; nothing but commands and
	// tests imports it, so the server does not link it.
	{pkg: "mirror", deps: []string{"sessiontree", "transcript", "pi", "segment", "internal/fsutil", "internal/jsonscan"}},
	// server is the HTTP API over repository, used by commands.
	{pkg: "server", deps: []string{"repository", "pi", "internal/jsonscan"}, sentinels: []string{"transcript", "transcript/bucket", "segment"}},
	{pkg: "repository", deps: []string{"sessiontree", "transcript", "pi", "internal/fsutil", "internal/jsonscan"},
		sentinels: []string{"transcript/bucket", "segment"}},
	// follow declares the ports it needs (an uploader, a store reader) and is
	// wired to the mirror and the store by the command.
	{pkg: "follow", deps: []string{"transcript", "pi", "segment", "internal/fsutil", "internal/jsonscan"}},
	{pkg: "sessiontree", deps: []string{"transcript", "pi", "segment", "internal/fsutil", "internal/jsonscan"}},
	{pkg: "transcript/bucketurl", deps: []string{"transcript/bucket", "internal/fsutil"}},
	{pkg: "transcript/bucket/buckettest", deps: []string{"transcript/bucket"}},
	{pkg: "transcript/bucket/faultbucket", deps: []string{"transcript/bucket"}},
	{pkg: "transcript/bucket/metricbucket", deps: []string{"transcript/bucket"}},
	{pkg: "transcript/bucket", deps: []string{"transcript/bucket", "segment", "internal/fsutil", "internal/jsonscan"}},
	{pkg: "transcript", deps: []string{"pi", "transcript/bucket", "segment", "internal/fsutil", "internal/jsonscan"}},
	{pkg: "pi", deps: []string{"internal/jsonscan"}},
	{pkg: "segment"},
	{pkg: "internal/fsutil"},
	{pkg: "internal/jsonscan"},
	{pkg: "internal/rclone"},
	{pkg: "internal/rusage"}, // the bench's and benchmarks' resource usage
	{pkg: "internal/archtest"},
}

// ruleOf returns the rule of the package rel (relative to the module).
func ruleOf(rel string) (deps, sentinels []string, found bool) {
	for _, a := range allowed {
		if rel == a.pkg || strings.HasPrefix(rel, strings.TrimSuffix(a.pkg, "/")+"/") {
			return a.deps, a.sentinels, true
		}
	}
	return nil, nil, false
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
		require.GreaterOrEqual(t, at, 0, "rule for %s: not in DESIGN.md's package list", a.pkg)
		for _, d := range append(slices.Clone(a.deps), a.sentinels...) {
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
		deps, sentinels, found := ruleOf(rel)
		require.True(t, found, "package %s has no layering rule", rel)
		checked++
		for _, imp := range p.Imports {
			dep, ours := strings.CutPrefix(imp, module)
			if !ours || slices.Contains(sentinels, dep) {
				continue // sentinel-only imports: TestSentinelOnlyImports
			}
			ok := false
			for _, r := range deps {
				if r == "" || dep == r || strings.HasPrefix(dep, r+"/") {
					ok = true
				}
			}
			require.True(t, ok, "%s imports %s, against the layering of DESIGN.md", rel, dep)
		}
	}
	require.Greater(t, checked, 5)
}
