package dfx_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/models/checkpoint"
)

// readmeRoot is the repository root seen from this folder; the README's
// copy of the example below runs from the root, where it is ".".
const readmeRoot = ".."

// Example_readme is the README's example, line for line (TestReadmeExample
// checks that the README shows this body and this output): the exact Fisher
// trace of a two-point Dirac mixture, then the DF-TM and exact VJP traces of
// the committed checkerboard networks.
func Example_readme() {
	root := readmeRoot
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}

	// The exact diffusion Fisher of the empirical distribution of two points.
	m, err := mixture.NewDirac(mat.NewDense(2, 2, []float64{-1, 0, 1, 0}), nil)
	must(err)
	at, err := schedule.At(schedule.DefaultVP(), 0.3)
	must(err)
	r, err := m.Eval(mixture.Query{At: at, X: mat.NewDense(1, 2, []float64{0.2, 0.1}), Want: mixture.Trace})
	must(err)
	fmt.Printf("mixture: exact tr F = %.3f\n", r.Trace[0])

	// A trained score network and its DF-TM network t_θ (two checkpoints).
	dir := root + "/toys/checkpoints/checkerboard-n5000-d1-ve-"
	eps, err := checkpoint.Read(dir + "score-w64x3-s8000-seed1.dfxckpt")
	must(err)
	tm, err := checkpoint.Read(dir + "df-tm-w64x3-s8000-seed1.dfxckpt")
	must(err)
	store, err := checkpoint.LoadWeights(eps)
	must(err)
	tmStore, err := checkpoint.LoadWeights(tm)
	must(err)
	must(models.CopyTrainable(store, tmStore))
	sch, err := eps.Header.Provenance.Schedule.Schedule()
	must(err)
	backend, err := models.NewBackend()
	must(err)
	net, err := models.NewAccessNet(backend, store, sch, true)
	must(err)
	dftm, err := access.NewDFTM(net) // one forward pass of ε and t_θ
	must(err)
	vjp, err := access.NewVJPTrace(net, 0) // d vector–Jacobian products
	must(err)
	at, err = schedule.At(sch, 0.8)
	must(err)
	x := mat.NewDense(2, 2, []float64{0.5, -1.5, 2.5, 0.5})
	fast, err := dftm.Trace(at, x)
	must(err)
	slow, err := vjp.Trace(at, x)
	must(err)
	fmt.Printf("network: DF-TM tr F = %.5f %.5f, VJP tr F = %.5f %.5f\n", fast[0], fast[1], slow[0], slow[1])
	// Output:
	// mixture: exact tr F = 2.271
	// network: DF-TM tr F = 0.02262 0.02262, VJP tr F = 0.02253 0.02214
}

// TestReadmeShowsTheExample: the README's Go program is Example_readme
// as a main function (imports, body and output), so that what the README
// shows is what go test compiles and runs.
func TestReadmeShowsTheExample(t *testing.T) {
	src, err := os.ReadFile("readme_test.go")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	imports := s[strings.Index(s, "import (") : strings.Index(s, "\n)\n")+3]
	for _, p := range []string{"os", "path/filepath", "regexp", "strings", "testing"} {
		imports = strings.Replace(imports, "\t\""+p+"\"\n", "", 1)
	}
	start := strings.Index(s, "func Example_readme() {")
	body := s[start : start+strings.Index(s[start:], "\n}\n")+3]
	body = strings.Replace(body, "func Example_readme() {", "func main() {", 1)
	body = strings.Replace(body, "root := readmeRoot", `root := "." // the repository root`, 1)
	want := "```go\npackage main\n\n" + imports + "\n" + body + "```\n"
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), want) {
		t.Errorf("README.md does not show Example_readme as its Go program; it should show:\n%s", want)
	}
}

// mdLink matches a Markdown link or image target: ](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocsLinksResolve: every relative link in README.md, docs/*.md and
// figures/**/NOTES.md names a file or folder that exists (anchors and
// external URLs aside).
func TestDocsLinksResolve(t *testing.T) {
	files := []string{"../README.md"}
	for _, g := range []string{"../docs/*.md", "../figures/*/NOTES.md", "../figures/INDEX.md"} {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 8 {
		t.Fatalf("only %d documents found: %v", len(files), files)
	}
	links := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(raw), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if i := strings.IndexByte(target, '#'); i >= 0 {
				target = target[:i]
			}
			links++
			if _, err := os.Stat(filepath.Join(filepath.Dir(f), target)); err != nil {
				t.Errorf("%s links to %s, which does not exist", f, m[1])
			}
		}
	}
	if links < 20 {
		t.Errorf("only %d relative links checked", links)
	}
}

// envName matches a DFX_* variable name in Go source.
var envName = regexp.MustCompile(`\bDFX_[A-Z0-9_]*[A-Z0-9]\b`)

// TestCLIDocumentsEveryVariable: every DFX_* variable that a non-test Go
// file of the command line or the library names is documented in
// docs/cli.md.
func TestCLIDocumentsEveryVariable(t *testing.T) {
	doc, err := os.ReadFile("../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	err = filepath.WalkDir("..", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && p != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, v := range envName.FindAllString(string(src), -1) {
			seen[v] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) < 5 {
		t.Fatalf("found only %d DFX_* variables: %v", len(seen), seen)
	}
	for v := range seen {
		if !strings.Contains(string(doc), "`"+v+"`") && !strings.Contains(string(doc), v+"=") {
			t.Errorf("docs/cli.md does not document %s", v)
		}
	}
}
