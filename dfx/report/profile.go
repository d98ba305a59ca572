package report

import "os"

// QuickEnv is the environment variable that selects the quick profile of
// every experiment: DFX_QUICK=1. It is read here and nowhere else; the
// notebook runner (scripts/run-notebooks.sh) and `make test` set it, and
// `dfx reproduce` takes it as the default of -quick. Each experiment package
// turns it into its configuration through one function (toys.Profile,
// ot.Profile, …), so notebooks never read the environment themselves.
const QuickEnv = "DFX_QUICK"

// QuickProfile reports whether the quick profile is selected ($DFX_QUICK=1).
func QuickProfile() bool { return os.Getenv(QuickEnv) == "1" }

// Merge joins reports into one named name (tables, figures and files in
// order); Check reports any file name two of them share.
func Merge(name, title string, rs ...*Report) *Report {
	out := &Report{Name: name, Title: title}
	for _, r := range rs {
		out.Tables = append(out.Tables, r.Tables...)
		out.Figures = append(out.Figures, r.Figures...)
		out.Files = append(out.Files, r.Files...)
	}
	return out
}
