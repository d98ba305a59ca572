package mnist

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/adjoint"
	"github.com/dfx-lab/dfx/internal/tensormat"
	"github.com/dfx-lab/dfx/models"
)

// tinyClassifier is a randomly initialised classifier of the MNIST shapes
// (784-32-32-10, SiLU so that finite differences see no kinks; width 32 is
// two units per style group). GoMLX creates the variables on the first
// execution, so one forward pass runs before models.NewClassifier.
func tinyClassifier(t *testing.T, nets *Networks) {
	t.Helper()
	store := models.NewStore()
	store.SetParams(map[string]any{models.ParamWidth: 32, models.ParamDepth: 2, models.ParamNumClasses: 10, models.ParamActivation: "silu"})
	if err := store.SetRNGStateFromSeed(7); err != nil { // the same network every run
		t.Fatal(err)
	}
	init, err := model.NewExec(nets.Backend, store, func(scope *model.Scope, x *graph.Node) *graph.Node {
		logits, _ := models.ClassifierNet(scope, x)
		return logits
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := init.Exec(tensors.FromFlatDataAndDimensions(make([]float32, Dim), 1, Dim))
	if err != nil {
		t.Fatal(err)
	}
	out[0].MustFinalizeAll()
	if nets.Classifier, err = models.NewClassifier(nets.Backend, store, Dim); err != nil {
		t.Fatal(err)
	}
}

// imagesIn are b images with pixels uniform in (−0.9, 0.9): inside the
// data range, away from CentringReward's clamp.
func imagesIn(b int, seed uint64) *mat.Dense {
	rng := rand.New(rand.NewPCG(seed, 2))
	x := mat.NewDense(b, Dim, nil)
	for i := range b {
		for j := range Dim {
			x.Set(i, j, 1.8*rng.Float64()-0.9)
		}
	}
	return x
}

// checkGradient compares the reward's gradient g with central differences
// of its loss, with step h, relative tolerance tol: along g/‖g‖ (where the
// derivative is ‖g‖), along a random unit direction v (error relative to
// ‖g‖, the largest |⟨g, v⟩| can be, since ⟨g, v⟩ itself may be near 0),
// and on the three coordinates of each row with the largest |g_j|.
func checkGradient(t *testing.T, name string, loss adjoint.Loss, x *mat.Dense, h, tol float64) {
	t.Helper()
	l0, g, err := loss(x)
	if err != nil {
		t.Fatal(err)
	}
	b, d := x.Dims()
	if len(l0) != b || g == nil {
		t.Fatalf("%s: %d losses and gradient %v for %d rows", name, len(l0), g, b)
	}
	// along returns (L(x + h·dir) − L(x − h·dir))/2h per row.
	along := func(dir *mat.Dense) []float64 {
		xp, xm := mat.NewDense(b, d, nil), mat.NewDense(b, d, nil)
		xp.Add(x, scaled(h, dir))
		xm.Sub(x, scaled(h, dir))
		lp, _, err := loss(xp)
		if err != nil {
			t.Fatal(err)
		}
		lm, _, err := loss(xm)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]float64, b)
		for i := range b {
			out[i] = (lp[i] - lm[i]) / (2 * h)
		}
		return out
	}
	near := func(what string, fd, an, scale float64) {
		if math.Abs(fd-an) > tol*scale {
			t.Errorf("%s: %s: finite difference %.6g, gradient %.6g (error %.2g of %.3g)", name, what, fd, an, math.Abs(fd-an)/scale, scale)
		}
	}
	norms := make([]float64, b)
	unit, random := mat.NewDense(b, d, nil), mat.NewDense(b, d, nil)
	rng := rand.New(rand.NewPCG(9, 9))
	for i := range b {
		norms[i] = floats.Norm(g.RawRowView(i), 2)
		if norms[i] == 0 {
			t.Fatalf("%s: row %d: zero gradient", name, i)
		}
		floats.ScaleTo(unit.RawRowView(i), 1/norms[i], g.RawRowView(i))
		r := random.RawRowView(i)
		for j := range r {
			r[j] = rng.NormFloat64()
		}
		floats.Scale(1/floats.Norm(r, 2), r)
	}
	fdU, fdR := along(unit), along(random)
	for i := range b {
		near(fmt.Sprintf("row %d, along the gradient", i), fdU[i], norms[i], norms[i])
		near(fmt.Sprintf("row %d, random direction", i), fdR[i], floats.Dot(random.RawRowView(i), g.RawRowView(i)), norms[i])
		for _, j := range topCoordinates(g.RawRowView(i), 3) {
			e := mat.NewDense(b, d, nil)
			e.Set(i, j, 1)
			near(fmt.Sprintf("row %d, pixel %d", i, j), along(e)[i], g.At(i, j), math.Abs(g.At(i, j)))
		}
	}
}

func scaled(h float64, m *mat.Dense) *mat.Dense {
	out := mat.DenseCopyOf(m)
	out.Scale(h, out)
	return out
}

// topCoordinates are the indices of the k largest |v_j|.
func topCoordinates(v []float64, k int) []int {
	var top []int
	used := map[int]bool{}
	for range k {
		best := -1
		for j, x := range v {
			if !used[j] && (best < 0 || math.Abs(x) > math.Abs(v[best])) {
				best = j
			}
		}
		used[best] = true
		top = append(top, best)
	}
	return top
}

// TestClassRewardIsMinusLogProbAndItsGradient: the class loss is the
// classifier's −log p(k | x) (as Classifier.LogProbs computes it), lowest
// for the class the classifier finds most probable, one target per row
// when given, and its gradient matches finite differences.
func TestClassRewardIsMinusLogProbAndItsGradient(t *testing.T) {
	nets := tinyNetworks(t)
	tinyClassifier(t, nets)
	x := imagesIn(3, 1)
	logp, _, err := nets.Classifier.LogProbs(x)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		row := logp.RawRowView(i)
		best, worst := 0, 0
		for k, v := range row {
			if v > row[best] {
				best = k
			}
			if v < row[worst] {
				worst = k
			}
		}
		lb, _ := nets.ClassReward(best)
		lw, _ := nets.ClassReward(worst)
		vb, _, err := lb(x)
		if err != nil {
			t.Fatal(err)
		}
		vw, _, err := lw(x)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(vb[i]+row[best]) > 1e-5 || math.Abs(vw[i]+row[worst]) > 1e-5 {
			t.Errorf("row %d: loss %g, %g for classes %d, %d; −log p = %g, %g", i, vb[i], vw[i], best, worst, -row[best], -row[worst])
		}
		if !(vb[i] < vw[i]) {
			t.Errorf("row %d: the most probable class's loss %g is not below the least probable's %g", i, vb[i], vw[i])
		}
	}
	perRow, err := nets.ClassReward(2, 5, 7)
	if err != nil {
		t.Fatal(err)
	}
	v, _, err := perRow(x)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range []int{2, 5, 7} {
		if math.Abs(v[i]+logp.At(i, k)) > 1e-5 {
			t.Errorf("row %d: per-row target %d gives %g, want %g", i, k, v[i], -logp.At(i, k))
		}
	}
	checkGradient(t, "class", perRow, x, 1e-2, 1e-2)
	if _, _, err := perRow(imagesIn(2, 3)); !errors.Is(err, adjoint.ErrInput) {
		t.Errorf("3 targets for 2 rows: %v", err)
	}
	if _, err := nets.ClassReward(10); err == nil {
		t.Error("target 10 accepted")
	}
	if _, err := nets.ClassReward(); err == nil {
		t.Error("no target accepted")
	}
}

// TestStyleRewardVanishesAtTheReferenceAndItsGradient: the Gram style loss
// is 0 at the reference and positive elsewhere, smaller for the reference
// slightly perturbed than for an unrelated image, and its gradient matches
// finite differences.
func TestStyleRewardVanishesAtTheReferenceAndItsGradient(t *testing.T) {
	nets := tinyNetworks(t)
	tinyClassifier(t, nets)
	x := imagesIn(3, 4)
	ref := append([]float64(nil), x.RawRowView(0)...)
	loss, err := nets.StyleReward(ref)
	if err != nil {
		t.Fatal(err)
	}
	near := mat.NewDense(1, Dim, nil)
	rng := rand.New(rand.NewPCG(5, 5))
	for j := range Dim {
		near.Set(0, j, ref[j]+0.05*rng.NormFloat64())
	}
	withNear := mat.NewDense(4, Dim, nil)
	for i := range 3 {
		withNear.SetRow(i, x.RawRowView(i))
	}
	withNear.SetRow(3, near.RawRowView(0))
	v, _, err := loss(withNear)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(v[0]) > 1e-9 || !(v[1] > 0 && v[2] > 0) {
		t.Errorf("losses %v: want 0 for the reference (row 0), > 0 for the others", v)
	}
	if !(v[3] < v[1] && v[3] < v[2]) {
		t.Errorf("the perturbed reference's loss %g is not below the unrelated images' %g, %g", v[3], v[1], v[2])
	}
	// the formula, on the host: hidden layers from the graph, Gram matrices in float64
	hid, err := model.NewExec(nets.Backend, nets.Classifier.Store, func(scope *model.Scope, x *graph.Node) *graph.Node {
		_, h := models.ClassifierLayers(scope, x)
		return graph.Stack(h, 0) // [layers, B, width]
	})
	if err != nil {
		t.Fatal(err)
	}
	layers, err := hid.Exec(tensormat.FromMatrix(dtypes.Float32, withNear))
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, 4)
	all := tensormat.Copy(layers[0])
	layers[0].MustFinalizeAll()
	for l := range 2 {
		h := mat.NewDense(4, 32, all[l*4*32:(l+1)*4*32])
		gram := func(i int) *mat.Dense { // G groups of m = 2 units: Γ = H Hᵀ/m
			hg := mat.NewDense(StyleGroups, 2, append([]float64(nil), h.RawRowView(i)...))
			out := mat.NewDense(StyleGroups, StyleGroups, nil)
			out.Mul(hg, hg.T())
			out.Scale(0.5, out)
			return out
		}
		ref := gram(0)
		for i := range 4 {
			diff := gram(i)
			diff.Sub(diff, ref)
			f := mat.Norm(diff, 2)
			want[i] += f * f / (StyleGroups * StyleGroups)
		}
	}
	for i := range 4 {
		if math.Abs(v[i]-want[i]) > 1e-4*want[1] {
			t.Errorf("row %d: style loss %g, want Σ_ℓ ‖Γ − Γ_ref‖²/G² = %g", i, v[i], want[i])
		}
	}
	checkGradient(t, "style", loss, x.Slice(1, 3, 0, Dim).(*mat.Dense), 1e-2, 1e-2)
	if _, err := nets.StyleReward(ref[:10]); err == nil {
		t.Error("a reference of 10 pixels accepted")
	}
}

// TestIdentityRewardIsTheRelativeFeatureDistance: the identity loss is
// ‖f(x) − f(ref)‖²/‖f(ref)‖² on the classifier's penultimate features (as
// Classifier.LogProbs returns them), 0 at the reference, and its gradient
// matches finite differences.
func TestIdentityRewardIsTheRelativeFeatureDistance(t *testing.T) {
	nets := tinyNetworks(t)
	tinyClassifier(t, nets)
	x := imagesIn(3, 6)
	ref := append([]float64(nil), x.RawRowView(0)...)
	loss, err := nets.IdentityReward(ref)
	if err != nil {
		t.Fatal(err)
	}
	v, _, err := loss(x)
	if err != nil {
		t.Fatal(err)
	}
	_, feat, err := nets.Classifier.LogProbs(x)
	if err != nil {
		t.Fatal(err)
	}
	fr := feat.RawRowView(0)
	for i := range 3 {
		var num, den float64
		for j, f := range feat.RawRowView(i) {
			num += (f - fr[j]) * (f - fr[j])
			den += fr[j] * fr[j]
		}
		if math.Abs(v[i]-num/den) > 1e-4*math.Max(num/den, 1e-3) {
			t.Errorf("row %d: loss %g, want ‖f − f_ref‖²/‖f_ref‖² = %g", i, v[i], num/den)
		}
	}
	if math.Abs(v[0]) > 1e-9 || !(v[1] > 0) {
		t.Errorf("losses %v: want 0 at the reference, > 0 elsewhere", v)
	}
	checkGradient(t, "identity", loss, x.Slice(1, 3, 0, Dim).(*mat.Dense), 1e-2, 1e-2)
}

// blob is an image of background −1 with a 4 × 4 square of ink 1 whose
// top-left pixel is (r, c).
func blob(r, c int) []float64 {
	x := make([]float64, Dim)
	for j := range x {
		x[j] = -1
	}
	for i := range 4 {
		for j := range 4 {
			x[(r+i)*28+c+j] = 1
		}
	}
	return x
}

// TestCentringRewardIsTheCentroidOffset: a square centred on (13.5, 13.5)
// has loss 0, the same square shifted by (dy, dx) has loss
// (dy² + dx²)·(M/(M + ε))² with M = 16 pixels of ink, and the gradient
// matches finite differences (float64: tight).
func TestCentringRewardIsTheCentroidOffset(t *testing.T) {
	loss := CentringReward()
	x := mat.NewDense(3, Dim, nil)
	x.SetRow(0, blob(12, 12))
	x.SetRow(1, blob(15, 12)) // 3 px down
	x.SetRow(2, blob(8, 16))  // 4 px up, 4 right
	v, _, err := loss(x)
	if err != nil {
		t.Fatal(err)
	}
	shrink := 16 / (16 + CentringMass)
	for i, want := range []float64{0, 9 * shrink * shrink, 32 * shrink * shrink} {
		if math.Abs(v[i]-want) > 1e-12 {
			t.Errorf("row %d: loss %g, want %g", i, v[i], want)
		}
	}
	checkGradient(t, "centring", loss, imagesIn(2, 7), 1e-4, 1e-6)
	if _, _, err := loss(mat.NewDense(1, 10, nil)); !errors.Is(err, adjoint.ErrInput) {
		t.Errorf("10-pixel images: %v", err)
	}
}
