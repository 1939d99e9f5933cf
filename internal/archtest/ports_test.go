package archtest_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServerLinksNoMirror checks `go list -deps` of the server and the packages
// below it: sessiontree declares the uploader port and mirror implements it, so
// nothing the server links depends on mirror (or on any other implementation of a
// port: those are wired by the commands).
func TestServerLinksNoMirror(t *testing.T) {
	listed := 0
	for _, p := range goList(t, "ImportPath,Deps", module+"server", module+"repository", module+"sessiontree") {
		listed++
		require.Greater(t, len(p.Deps), 10, "%s: no dependencies listed", p.ImportPath)
		require.Contains(t, p.Deps, module+"transcript", "%s: the project's packages are not listed", p.ImportPath)
		require.NotContains(t, p.Deps, module+"mirror", "%s links mirror, which implements sessiontree's uploader port", p.ImportPath)
	}
	require.Equal(t, 3, listed)
}
