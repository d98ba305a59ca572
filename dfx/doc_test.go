package dfx

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var dirs = map[string]string{
	"schedule": "schedule", "mixture": "mixture", "access": "access", "pfode": "pfode",
	"likelihood": "likelihood", "adjoint": "adjoint", "models": "../models", "ot": "../ot", "toys": "../toys", "mnist": "../mnist",
}

// TestTheLabelIndexNamesOnlyIdentifiersThatExist keeps doc.go's table
// current: every pkg.Name it cites is declared in that package.
func TestTheLabelIndexNamesOnlyIdentifiersThatExist(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	ref := regexp.MustCompile(`\b(schedule|mixture|access|pfode|likelihood|adjoint|models|ot|toys)\.([A-Z]\w*)`)
	found := 0
	for _, m := range ref.FindAllStringSubmatch(string(doc), -1) {
		pkg, name := m[1], m[2]
		files, _ := filepath.Glob(filepath.Join(dirs[pkg], "*.go"))
		decl := regexp.MustCompile(`(?m)^(func (\([^)]*\) )?` + name + `\b|type ` + name + `\b|\t` + name + `\b|var ` + name + `\b|const ` + name + `\b)`)
		ok := false
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, _ := os.ReadFile(f)
			if decl.Match(src) {
				ok = true
				break
			}
		}
		if !ok {
			t.Errorf("doc.go cites %s.%s, which %s does not declare", pkg, name, dirs[pkg])
		}
		found++
	}
	if found < 30 {
		t.Errorf("only %d references found: the pattern no longer matches the table", found)
	}
}
