package model

import (
	"context"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/models"
)

// TestFrechetMatchesTheClosedForm: for diagonal covariances the Fréchet
// distance is ‖Δμ‖² + Σ (√a − √b)²; of a Gaussian with itself, 0.
func TestFrechetMatchesTheClosedForm(t *testing.T) {
	a, b := []float64{0.5, 2, 1e-3}, []float64{1, 0.25, 4}
	m1, m2 := []float64{0, 1, 2}, []float64{1, 1, -1}
	c1, c2 := mat.NewSymDense(3, nil), mat.NewSymDense(3, nil)
	want := 0.0
	for i := range a {
		c1.SetSym(i, i, a[i])
		c2.SetSym(i, i, b[i])
		want += (m1[i]-m2[i])*(m1[i]-m2[i]) + math.Pow(math.Sqrt(a[i])-math.Sqrt(b[i]), 2)
	}
	got, err := frechet(m1, c1, m2, c2)
	if err != nil || math.Abs(got-want) > 1e-9 {
		t.Errorf("Fréchet distance %g (%v), want %g", got, err, want)
	}
	// A rotated, correlated covariance against itself.
	c := mat.NewSymDense(3, []float64{2, 0.5, 0.1, 0.5, 1, 0.3, 0.1, 0.3, 0.7})
	if self, err := frechet(m1, c, m1, c); err != nil || math.Abs(self) > 1e-9 {
		t.Errorf("Fréchet distance of a Gaussian with itself %g (%v), want 0", self, err)
	}
}

// TestQualityOfTestImages: held-out test images measured as samples agree
// with their labels (classifier and k-NN), have a small Fréchet distance to
// the reference statistics of other test images, and are not copies.
func TestQualityOfTestImages(t *testing.T) {
	if testing.Short() {
		t.Skip("loads MNIST and the committed classifier")
	}
	backend, err := models.NewBackend()
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := mnist.LoadNetwork("", "classifier")
	if err != nil {
		t.Fatal(err)
	}
	cls, err := models.NewClassifier(backend, st, mnist.Dim)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := NewQualityRef(context.Background(), mnist.Problem(), mnist.Lab{}, cls, 500)
	if err != nil {
		t.Fatal(err)
	}
	te, _ := mnist.Load(mnist.Test)
	x, _ := te.Dequantized(5000, 300, 9)
	labels := make([]int, 300)
	for i := range labels {
		labels[i] = int(te.Labels[5000+i])
	}
	q, err := ref.Measure(x, labels)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v (test nearest median %.3f)", *q, ref.TestNearest)
	if q.ClassifierAgree < 0.95 || q.KNNAgree < 0.9 || q.Copies != 0 || q.FrameRMS > 0.05 {
		t.Errorf("test images as samples: %+v", *q)
	}
	// Noise is far in feature space (the Fréchet distance of 300 samples in
	// 512 features carries a large bias: compare, do not threshold).
	noise := mat.NewDense(200, mnist.Dim, nil)
	for i := 0; i < 200; i++ {
		for j := 0; j < mnist.Dim; j++ {
			noise.Set(i, j, math.Sin(float64(i*mnist.Dim+j)))
		}
	}
	qn, err := ref.Measure(noise, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !(qn.FD > 3*q.FD) {
		t.Errorf("noise Fréchet distance %g, test images %g: the feature distance does not separate them", qn.FD, q.FD)
	}
}
