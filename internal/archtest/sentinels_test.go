package archtest_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSentinelOnlyImports checks the imports a rule allows only for sentinel
// errors (allowed[].sentinels): in the package's non-test files every use of such
// an import is an identifier starting with "Err" (bucket.ErrNotFound), never a
// type, a function or an operation, so that the layer reaches the one below only
// through the one in between, and tests its errors by the values they wrap.
func TestSentinelOnlyImports(t *testing.T) {
	uses := 0
	for _, a := range allowed {
		if len(a.sentinels) == 0 {
			continue
		}
		only := map[string]bool{}
		for _, s := range a.sentinels {
			only[module+s] = true
		}
		dir := filepath.Join("..", "..", filepath.FromSlash(a.pkg))
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		fset := token.NewFileSet()
		for _, e := range entries {
			name := e.Name()
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
			require.NoError(t, err)
			local := map[string]string{} // local name -> sentinel-only import path
			for _, imp := range f.Imports {
				path, err := strconv.Unquote(imp.Path.Value)
				require.NoError(t, err)
				if !only[path] {
					continue
				}
				n := path[strings.LastIndexByte(path, '/')+1:]
				if imp.Name != nil {
					n = imp.Name.Name
				}
				local[n] = path
			}
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				x, ok := sel.X.(*ast.Ident)
				if !ok || local[x.Name] == "" {
					return true
				}
				uses++
				require.True(t, strings.HasPrefix(sel.Sel.Name, "Err"),
					"%s: %s uses %s.%s; it may import %s only for its sentinel errors",
					fset.Position(sel.Pos()), a.pkg, x.Name, sel.Sel.Name, local[x.Name])
				return true
			})
		}
	}
	require.Greater(t, uses, 10, "no sentinel use found: the check checks nothing")
}
