package dfx_test

import (
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/models"
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
	eps, err := models.ReadCheckpoint(dir + "score-w64x3-s8000-seed1.dfxckpt")
	must(err)
	tm, err := models.ReadCheckpoint(dir + "df-tm-w64x3-s8000-seed1.dfxckpt")
	must(err)
	store, err := models.LoadWeights(eps)
	must(err)
	tmStore, err := models.LoadWeights(tm)
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
