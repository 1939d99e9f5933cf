package archtest_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNoTypeAssertionsAcrossPackages keeps the contracts between the project's
// packages in their interfaces: no non-test code asks a value, by type assertion
// (or type switch), for a type of another package of the project. Bucket
// capabilities are methods of bucket.Bucket, so a wrapper that forgot one is caught
// by the compiler, not by a silent fallback; sessiontree's uploader port states
// what it reads and holds in methods every uploader implements, so an uploader
// cannot lose crash recovery by missing an optional interface.
func TestNoTypeAssertionsAcrossPackages(t *testing.T) {
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir("../..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); p != "../.." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		ours := projectImports(f)
		ast.Inspect(f, func(n ast.Node) bool {
			for _, typ := range assertedTypes(n) {
				if sel, ok := typ.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && ours[x.Name] {
						t.Errorf("%s: type assertion to %s.%s; a contract between two packages is an interface's methods",
							fset.Position(typ.Pos()), x.Name, sel.Sel.Name)
					}
				}
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, files, 100, "walked too few files")
}

// projectImports returns the names under which f imports packages of the project.
func projectImports(f *ast.File) map[string]bool {
	names := map[string]bool{}
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil || !strings.HasPrefix(p, module) {
			continue
		}
		name := path.Base(p)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = true
	}
	return names
}

// assertedTypes returns the types n asserts: those of a type assertion, or of
// the cases of a type switch.
func assertedTypes(n ast.Node) []ast.Expr {
	switch n := n.(type) {
	case *ast.TypeAssertExpr:
		if n.Type != nil { // nil in x.(type) of a type switch
			return []ast.Expr{n.Type}
		}
	case *ast.TypeSwitchStmt:
		var types []ast.Expr
		for _, c := range n.Body.List {
			types = append(types, c.(*ast.CaseClause).List...)
		}
		return types
	}
	return nil
}
