package density

import (
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/models"
)

// The study's traces are specs of dfx/access's registry, named (in tables,
// work records and the report) by the registry's labels: the names they
// have always had, whichever spelling the configuration uses; a
// skip-hutchinson trace without a mixture skip runs as hutchinson with the
// same K.
func TestTraceNamesAreTheRegistrysLabels(t *testing.T) {
	if got := strings.Join(Traces(), "|"); got != "df-tm|df-tm-c|hutchinson:K|skip-hutchinson:K|vjp" {
		t.Errorf("Traces: %s", got)
	}
	for spec, want := range map[string]string{"df-tm": "df-tm", "dftm": "df-tm", "dftmc": "df-tm-c", "df-tm-c": "df-tm-c", "vjp": "vjp",
		"vjp-exact": "vjp", "hutchinson:4": "hutchinson:4", "hutchinson-1024": "hutchinson:1024", "skip-hutchinson-4": "skip-hutchinson:4"} {
		if s, err := CheckTrace(spec); err != nil || s.Label() != want {
			t.Errorf("trace %q: %q, %v; want %q", spec, s.Label(), err, want)
		}
	}
	for _, spec := range []string{"hutch++:6", "hutchinson:1025", "skip-hutchinson:0", "hutchinson", "exact", ""} {
		_, err := CheckTrace(spec)
		if err == nil || !strings.Contains(err.Error(), "df-tm, df-tm-c, hutchinson:K, skip-hutchinson:K or vjp, with K in 1…1024") {
			t.Errorf("trace %q: %v, want refused with the valid names", spec, err)
		}
	}
	skip := model.NewStore()
	skip.RootScope().At(models.MixtureScope).VariableWithValue("w", tensors.FromValue([]float64{1}))
	withSkip, without := &access.Net{Store: skip}, &access.Net{Store: model.NewStore()}
	for _, c := range []struct {
		net        *access.Net
		name, want string
		fellBack   bool
	}{{withSkip, "skip-hutchinson:4", "skip-hutchinson:4", false}, {without, "skip-hutchinson:4", "hutchinson:4", true},
		{without, "skip-hutchinson-16", "hutchinson:16", true}, {without, "hutchinson-2", "hutchinson:2", false}, {without, "vjp-exact", "vjp", false}} {
		run, fellBack, err := runnableTrace(c.net, c.name)
		if err != nil || run != c.want || fellBack != c.fellBack {
			t.Errorf("%s (mixture skip %v) runs as %q (fell back %v, %v), want %q (%v)", c.name, c.net == withSkip, run, fellBack, err, c.want, c.fellBack)
		}
	}
	for name, want := range map[string]string{"skip-hutchinson:4": "skip-hutchinson:4 (the skip mixture's exact trace plus Hutchinson-4 on the residual)",
		"hutchinson:4": "hutchinson:4"} {
		if got := measureAbout(name); got != want {
			t.Errorf("measureAbout(%q) = %q, want %q", name, got, want)
		}
	}
}
