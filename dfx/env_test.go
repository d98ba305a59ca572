package dfx

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// allowedEnv are the variables a library package may read, each with why:
// the entry points (cmd/dfx, dfx/notebook) read every DFX_* variable and
// pass settings down (report.Env, mnist.SetDataDir).
var allowedEnv = map[string]string{
	"GOMLX_BACKEND": "GoMLX's own variable: its backends.New reads it whatever dfx does; models validates it first",
	"GOMODCACHE":    "the Go tool's module cache, where the GoMNIST module ships the MNIST files",
	"GOPATH":        "the Go tool's module cache's default parent",
}

// TestNoLibraryReadsTheEnvironment parses every non-test file of the
// library and experiment packages and fails on a call of os.Getenv,
// os.LookupEnv or os.Environ that reads anything but allowedEnv.
func TestNoLibraryReadsTheEnvironment(t *testing.T) {
	var files []string
	for _, root := range []string{".", "../models", "../toys", "../ot", "../mnist", "../internal"} {
		err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && filepath.Base(p) == "notebook" { // an entry point, like cmd/dfx
				return filepath.SkipDir
			}
			if d.IsDir() && filepath.Base(p) == "testwait" { // test support, which no library imports (checked below)
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(files) < 50 {
		t.Fatalf("found only %d files", len(files))
	}
	fset := token.NewFileSet()
	for _, p := range files {
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if strings.HasSuffix(imp.Path.Value, `/internal/testwait"`) {
				t.Errorf("%s imports internal/testwait, which reads %s: only tests may", p, "DFX_TEST_WAIT")
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "os" {
				return true
			}
			switch sel.Sel.Name {
			case "Getenv", "LookupEnv":
				if lit, ok := call.Args[0].(*ast.BasicLit); ok {
					if name, err := strconv.Unquote(lit.Value); err == nil && allowedEnv[name] != "" {
						return true
					}
				}
				t.Errorf("%s: os.%s(%s): a library reads no variable; take it as a setting (report.Env, a config field) from cmd/dfx or dfx/notebook",
					fset.Position(call.Pos()), sel.Sel.Name, exprString(call.Args[0]))
			case "Environ":
				t.Errorf("%s: os.Environ in a library", fset.Position(call.Pos()))
			}
			return true
		})
	}
}

func exprString(e ast.Expr) string {
	if lit, ok := e.(*ast.BasicLit); ok {
		return lit.Value
	}
	return "a computed name"
}
