package cmd_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the house limit for a function outside tests: longer ones
// are split by step, so that each reads in one pass.
const maxFuncLines = 100

// TestNoLongFunctions holds the limit over the module's non-test,
// non-generated Go files.
func TestNoLongFunctions(t *testing.T) {
	for _, root := range []string{"../api", "../cmd", "../internal"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") ||
				strings.HasSuffix(path, "_test.go") || strings.HasPrefix(d.Name(), "zz_generated") {
				return err
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if fn, ok := n.(*ast.FuncDecl); ok && fn.Body != nil {
					lines := fset.Position(fn.Body.Rbrace).Line - fset.Position(fn.Pos()).Line + 1
					if lines > maxFuncLines {
						t.Errorf("%s: %s is %d lines, over %d: split it by step", fset.Position(fn.Pos()), fn.Name.Name, lines, maxFuncLines)
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
