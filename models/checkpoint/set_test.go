package checkpoint

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/models"
)

// A Set combines an ε-network's file with the t_θ file made for it, and
// refuses what a run cannot use as given: another dimension or schedule,
// a network given twice, a t_θ of another ε-network, a trace network the
// run needs but was not given, a file the run does not use.
func TestSetCombinesFilesAndRefusesWhatARunCannotUse(t *testing.T) {
	dir := t.TempDir()
	unconditional := func() *models.Trainer { // as the trace networks are: no class input
		data, _ := tinyData(64, 3)
		tr, err := models.NewTrainer(models.MustNewTrainBackend(), tinyStore(), schedule.DefaultVP(), models.DSM, data, nil)
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	a, b := unconditional(), unconditional()
	if _, err := b.TrainSteps(2); err != nil {
		t.Fatal(err)
	}
	epsA := weightsOf(t, a, testProvenance, models.ScoreScope)
	write := func(name string, c *Checkpoint) string {
		p := filepath.Join(dir, name)
		if err := c.Write(p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	eps := write("eps.dfxckpt", epsA)
	other := write("other.dfxckpt", weightsOf(t, b, testProvenance, models.ScoreScope))
	trace := write("dftm.dfxckpt", tinyTrace(t, epsA))
	d, vp := epsA.Header.Dim, schedule.DefaultVP()

	set, err := ReadSet([]string{eps, trace}, d, vp)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(set.Networks(), ","); got != models.TraceScope+","+models.ScoreScope && got != models.ScoreScope+","+models.TraceScope {
		t.Errorf("networks %s", got)
	}
	if err := set.Use(models.TraceScope, "--trace dftm"); err != nil {
		t.Errorf("the pair, used for DF-TM: %v", err)
	}
	held := map[string]bool{}
	for v := range set.Store.IterVariables() {
		held[strings.SplitN(strings.TrimPrefix(v.Path(), "/"), "/", 2)[0]] = true
	}
	if !held[models.ScoreScope] || !held[models.TraceScope] {
		t.Errorf("the store holds the variables of %v, want both networks'", held)
	}
	for _, tc := range []struct {
		paths       []string
		d           int
		s           schedule.Schedule
		need, want  string
		failsToRead bool
	}{
		{[]string{eps}, d + 1, vp, "", "takes points of dimension", true},
		{[]string{eps}, d, schedule.DefaultVE(), "", "does not go with the ve schedule", true},
		{[]string{eps, eps}, d, vp, "", "both hold the score network", true},
		{[]string{other, trace}, d, vp, models.TraceScope, "was not made for the score network", false},
		{[]string{eps}, d, vp, models.TraceScope, "needs the dftm network", false},
		{[]string{eps, trace}, d, vp, "", "which the run does not use", false},
		{[]string{trace}, d, vp, models.TraceScope, "no score network", false},
	} {
		set, err := ReadSet(tc.paths, tc.d, tc.s)
		if err == nil {
			if tc.failsToRead {
				t.Errorf("%v on d=%d, %s: read", tc.paths, tc.d, tc.s.Name())
				continue
			}
			err = set.Use(tc.need, "the run")
		}
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v (need %q): %v; want an invalid-checkpoint error saying %q", tc.paths, tc.need, err, tc.want)
		}
	}
}
