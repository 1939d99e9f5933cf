package archtest_test

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/transcriptstore/transcript/"

// allowed maps a package prefix (relative to the module) to the project packages it
// may import (prefixes too). A package imports only those below it:
// segment ← transcript ← mirror ← sessiontree ← repository ← server ← cmd; internal/ helpers
// are shared. pi, the Pi session model, stands beside segment: it imports no
// storage package, transcript may use it only for entry parsing, and sessiontree,
// repository and the commands use it for every question about a session.
var allowed = []struct {
	pkg  string
	deps []string
}{
	{"segment", nil},
	{"pi", []string{"internal/jsonscan"}},
	{"internal/fsutil", nil},
	{"internal/jsonscan", nil},
	{"internal/churn", []string{"transcript"}},
	{"internal/cli", nil},
	{"internal/s3test", []string{"transcript"}},
	{"transcript", []string{"segment", "pi", "transcript", "internal/fsutil", "internal/jsonscan"}},
	{"mirror", []string{"segment", "pi", "transcript", "internal/fsutil", "internal/jsonscan", "mirror"}},
	{"sessiontree", []string{"segment", "pi", "transcript", "internal/fsutil", "internal/jsonscan", "mirror"}},
	{"repository", []string{"segment", "pi", "transcript", "internal/fsutil", "internal/jsonscan", "mirror", "sessiontree", "repository"}},
	// server is the HTTP API over repository, used by commands.
	{"server", []string{"segment", "pi", "transcript", "internal/fsutil", "internal/jsonscan", "mirror", "sessiontree", "repository"}},
	{"cmd/", []string{""}},
	{"internal/archtest", nil},
	// The reliability suite tests everything from outside, like a command.
	{"internal/reliability", []string{""}},
}

func TestLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", module+"...").Output()
	require.NoError(t, err)
	dec := json.NewDecoder(bytes.NewReader(out))
	checked := 0
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		require.NoError(t, dec.Decode(&p))
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
