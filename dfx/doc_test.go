package dfx

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var dirs = map[string]string{
	"schedule": "schedule", "mixture": "mixture", "score": "score", "access": "access", "pfode": "pfode",
	"likelihood": "likelihood", "adjoint": "adjoint", "report": "report", "plotx": "plotx",
	"models": "../models", "ot": "../ot", "toys": "../toys", "mnist": "../mnist",
}

// paperLabels are the paper's labels with the numbers its PDF prints (from
// the LaTeX source: equations, propositions, the corollary, algorithms,
// tables, figures, appendix sections) that the code implements; doc.go must
// cite each one on a row that starts with its printed number.
var paperLabels = map[string]string{
	"diffusion_kernel": "Eq. 1", "diffusion_sde": "Eq. 2", "dpm_objective": "Eq. 4", "PFODE": "Eq. 5",
	"dm_neural_ode": "Eq. 6", "fisher_def": "Eq. 7", "VJP": "Eq. 9", "dirac_initial_dist": "Eq. 10–11",
	"general_initial_dist": "Eq. 12–13", "nll_ode": "Eq. 14", "nll_VJP": "Eq. 15", "trace_matching": "Eq. 16",
	"trace_appro": "Eq. 17", "Adjoint_ODE": "Eq. 18", "Adjoint_VJP": "Eq. 19", "EA_approx": "Eq. 20", "eq:ot_b": "Eq. 22",
	"prop:analytic_dirac": "Prop. 1", "prop:optimal_y": "Prop. 2", "prop:analytic_general": "Prop. 3",
	"prop:optimal_y_general": "Prop. 4", "prop:trace_matching": "Prop. 5", "prop:optimal_t": "Prop. 6",
	"prop:error_bound_trace": "Prop. 7", "prop:error_bound_ea": "Prop. 8", "prop:ot": "Cor. 1",
	"algo:tnet": "Alg. 1", "algo:ot": "Alg. 2", "algo:to_detail": "Alg. 3", "sec:ea": "Sec. 5",
	"tab:my_label": "Table 1", "tab:trace_toy": "Table 2", "tab:ot": "Table 3",
	"fig:train_loss": "Fig. 1a", "fig:tradeoff": "Fig. 1b", "fig:nll_compare": "Fig. 2",
	"fig:adjoint_score": "Fig. 3", "fig:aes_shown": "Fig. 4",
	"app:extra_nll": "App. B.1", "app:extra_adjoint": "App. B.2", "app:extra_ot": "App. B.3", "app:hutchinson": "App. C.5",
	"diffusion_sde_rev": "Eq. 3", "information_dirac": "Eq. 10–11", "information_general": "Eq. 12–13",
	"sec:analytical": "Sec. 3", "sec:tm": "Sec. 4", "sec:ot": "Sec. 6", "fig:xx": "Fig. 1",
	"app:exp_models": "App. B.4", "app:discussion": "App. C", "app:singularity": "App. C.1", "app:covariance": "App. C.4",
	"lemma:v": "Eq. 23", "lemma:chain": "Lemma 2", "lemma:v_general": "Eq. 31", "lemma:chain_general": "Lemma 4",
	"optimal_p_eq1": "Eq. 41", "appendix:preliminary_ot": "App. A.9", "appendix:proof_ot": "App. A.10",
	"theorem:convex": "Thm. 1", "theorem:brenier": "Thm. 2", "theorem:poincare": "Thm. 3", "theorem:hessian_convex": "Thm. 4",
}

// paperLabelCount is the number of distinct non-empty \label{…} of the
// paper's LaTeX source (every one is in paperLabels).
const paperLabelCount = 64

// unlabelled are the numbers the PDF prints for equations of the main text
// (and the appendix's BPD) that have no label: doc.go has a row for each.
var unlabelled = []string{"Eq. 8", "Eq. 21", "App. C.2"}

func readDoc(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	return string(doc)
}

// TestTheLabelIndexNamesOnlyIdentifiersThatExist keeps doc.go's table
// current: every pkg.Name it cites, in the library and in the experiments
// (mnist included), is declared in that package.
func TestTheLabelIndexNamesOnlyIdentifiersThatExist(t *testing.T) {
	doc := readDoc(t)
	ref := regexp.MustCompile(`\b((?:studies/\w+)|schedule|mixture|score|access|pfode|likelihood|adjoint|report|plotx|models|ot|toys|mnist)\.([A-Z]\w*)`)
	found := map[string]int{}
	for _, m := range ref.FindAllStringSubmatch(doc, -1) {
		pkg, name := m[1], m[2]
		dir, ok := dirs[pkg]
		if !ok { // a study: studies/<name>
			dir = filepath.Join("..", pkg)
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		decl := regexp.MustCompile(`(?m)^(func (\([^)]*\) )?` + name + `\b|type ` + name + `\b|\t` + name + `\b|var ` + name + `\b|const ` + name + `\b)`)
		ok = false
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
			t.Errorf("doc.go cites %s.%s, which %s does not declare", pkg, name, dir)
		}
		found[pkg]++
	}
	for _, pkg := range []string{"score", "access", "pfode", "likelihood", "adjoint", "mixture", "models", "ot", "toys", "mnist"} {
		if found[pkg] == 0 {
			t.Errorf("doc.go cites nothing of %s: the pattern no longer matches the table", pkg)
		}
	}
}

// TestEveryPaperLabelIsIndexedWithItsPrintedNumber: each label of
// paperLabels stands in doc.go on a row that begins with the number the
// PDF prints, so a reader holding the PDF finds "Prop. 3" or "Eq. 17".
func TestEveryPaperLabelIsIndexedWithItsPrintedNumber(t *testing.T) {
	doc := readDoc(t)
	for label, printed := range paperLabels {
		ok := false
		for _, line := range strings.Split(doc, "\n") {
			row := strings.TrimPrefix(line, "//\t")
			if row != line && strings.HasPrefix(row, printed+" ") && regexp.MustCompile(`(^|[\s,])`+regexp.QuoteMeta(label)+`($|[\s,])`).MatchString(row) {
				ok = true
				break
			}
		}
		if !ok {
			t.Errorf("doc.go has no row %q … %s", printed, label)
		}
	}
	if len(paperLabels) != paperLabelCount {
		t.Errorf("%d labels indexed, the paper has %d", len(paperLabels), paperLabelCount)
	}
	for _, printed := range unlabelled {
		if !strings.Contains(doc, "//\t"+printed+" ") {
			t.Errorf("doc.go has no row for the unlabelled %s", printed)
		}
	}
}

// TestTablesAndFiguresNameCommittedFiles: every figures/… file that
// doc.go names for a table or figure is committed, and every row names the
// `dfx reproduce` command that writes it.
func TestTablesAndFiguresNameCommittedFiles(t *testing.T) {
	doc := readDoc(t)
	files := regexp.MustCompile(`figures/[\w./-]+\.(md|png|csv|svg)`).FindAllString(doc, -1)
	if len(files) < 10 {
		t.Fatalf("only %d figures/ files named", len(files))
	}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join("..", f)); err != nil {
			t.Errorf("doc.go names %s: %v", f, err)
		}
	}
	for _, line := range strings.Split(doc, "\n") {
		if strings.Contains(line, "figures/") && strings.HasPrefix(line, "//\t") && !strings.Contains(line, "dfx reproduce ") {
			t.Errorf("row without its command: %s", line)
		}
	}
}
