package model

import (
	"cmp"
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/internal/stats"
	"github.com/dfx-lab/dfx/mnist"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/problem"
)

// knnK is the number of nearest training images that vote in the k-NN
// agreement of Quality.
const knnK = 5

// QualityRef is what sample quality is measured against: a classifier (its
// predictions and its penultimate features), the 60 000 training images
// in [−1, 1] (k-NN votes on raw pixels, distances to the nearest one) and
// the classifier-feature statistics of the test images.
type QualityRef struct {
	cls         *models.Classifier
	train       *mixture.Dirac
	trainLabels []int
	mu          []float64
	cov         *mat.SymDense
	// TestNearest is the median distance of dequantised test images to
	// their nearest training image: what a sample that does not copy
	// the training set looks like.
	TestNearest float64
	TestImages  int
	dim         int // d of the samples
}

// NewQualityRef builds the reference of problem p from the classifier,
// p's training rows with their classes (lab.Labels) and the first testN
// dequantised test rows (seed 2).
func NewQualityRef(ctx context.Context, p *problem.Problem, lab Lab, cls *models.Classifier, testN int) (*QualityRef, error) {
	y, err := p.Train(ctx)
	if err != nil {
		return nil, err
	}
	dirac, err := mixture.NewDirac(y, nil)
	if err != nil {
		return nil, err
	}
	ref := &QualityRef{cls: cls, train: dirac, TestImages: testN, dim: p.Dim}
	if ref.trainLabels, err = lab.Labels(ctx); err != nil {
		return nil, err
	}
	x, err := p.Dequantized(ctx, testN, 2)
	if err != nil {
		return nil, err
	}
	_, feat, err := cls.LogProbs(x)
	if err != nil {
		return nil, err
	}
	ref.mu, ref.cov = moments(feat)
	_, dist, err := dirac.Nearest(x, 1)
	if err != nil {
		return nil, err
	}
	ref.TestNearest = stats.Median(firsts(dist))
	return ref, nil
}

// Quality is what QualityRef.Measure reports of a set of samples.
type Quality struct {
	N int
	// ClassifierAgree and KNNAgree are the fractions of samples whose
	// requested class the classifier predicts, and the majority of their
	// knnK nearest training images (raw pixels) has (NaN when no class was
	// requested).
	ClassifierAgree, KNNAgree float64
	FrameRMS                  float64 // rms intensity in [0, 1] of the 2-pixel frame
	// FD is the Fréchet distance between the samples' and the test images'
	// classifier features (this project's own feature space: not
	// comparable with published FIDs, which use Inception features).
	FD float64
	// NearestMedian is the median distance to the nearest training image;
	// Copies the fraction of samples closer to one than a tenth of the test
	// images' median (memorisation).
	NearestMedian, Copies float64
}

// Measure scores samples x [B, d] (in [−1, 1]); requested, if not nil, is
// each sample's requested class.
func (r *QualityRef) Measure(x *mat.Dense, requested []int) (*Quality, error) {
	b, d := x.Dims()
	if d != r.dim || b < 2 || (requested != nil && len(requested) != b) {
		return nil, fmt.Errorf("mnist: quality of [%d, %d] samples with %d classes", b, d, len(requested))
	}
	q := &Quality{N: b, FrameRMS: mnist.FrameRMS(x), ClassifierAgree: math.NaN(), KNNAgree: math.NaN()}
	logp, feat, err := r.cls.LogProbs(x)
	if err != nil {
		return nil, err
	}
	mu, cov := moments(feat)
	if q.FD, err = frechet(mu, cov, r.mu, r.cov); err != nil {
		return nil, err
	}
	idx, dist, err := r.train.Nearest(x, knnK)
	if err != nil {
		return nil, err
	}
	near := firsts(dist)
	q.NearestMedian = stats.Median(near)
	for _, v := range near {
		if v < r.TestNearest/10 {
			q.Copies++
		}
	}
	q.Copies /= float64(b)
	if requested != nil {
		var ca, ka float64
		for i := 0; i < b; i++ {
			if argmax(logp.RawRowView(i)) == requested[i] {
				ca++
			}
			votes := make([]int, 10)
			for _, j := range idx[i] {
				votes[r.trainLabels[j]]++
			}
			if argmax(votes) == requested[i] {
				ka++
			}
		}
		q.ClassifierAgree, q.KNNAgree = ca/float64(b), ka/float64(b)
	}
	return q, nil
}

// moments are the mean and covariance of the rows of f.
func moments(f *mat.Dense) ([]float64, *mat.SymDense) {
	n, w := f.Dims()
	mu := make([]float64, w)
	for i := 0; i < n; i++ {
		for j, v := range f.RawRowView(i) {
			mu[j] += v / float64(n)
		}
	}
	c := mat.NewDense(n, w, nil)
	for i := 0; i < n; i++ {
		for j, v := range f.RawRowView(i) {
			c.Set(i, j, v-mu[j])
		}
	}
	cov := mat.NewSymDense(w, nil)
	cov.SymOuterK(1/float64(n-1), c.T())
	return mu, cov
}

// frechet is the Fréchet distance between N(m1, c1) and N(m2, c2):
// ‖m1 − m2‖² + tr c1 + tr c2 − 2 tr (c1^{1/2} c2 c1^{1/2})^{1/2}.
func frechet(m1 []float64, c1 *mat.SymDense, m2 []float64, c2 *mat.SymDense) (float64, error) {
	s1, err := sqrtPSD(c1)
	if err != nil {
		return 0, err
	}
	var inner mat.Dense
	inner.Mul(s1, c2)
	inner.Mul(&inner, s1)
	w := len(m1)
	sym := mat.NewSymDense(w, nil)
	for i := 0; i < w; i++ {
		for j := i; j < w; j++ {
			sym.SetSym(i, j, (inner.At(i, j)+inner.At(j, i))/2)
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(sym, false) {
		return 0, fmt.Errorf("mnist: Fréchet distance: eigendecomposition failed")
	}
	fd := 0.0
	for i := range m1 {
		fd += (m1[i]-m2[i])*(m1[i]-m2[i]) + c1.At(i, i) + c2.At(i, i)
	}
	for _, l := range eig.Values(nil) {
		fd -= 2 * math.Sqrt(math.Max(l, 0))
	}
	return fd, nil
}

// sqrtPSD is the symmetric square root of a positive semi-definite matrix.
func sqrtPSD(c *mat.SymDense) (*mat.Dense, error) {
	var eig mat.EigenSym
	if !eig.Factorize(c, true) {
		return nil, fmt.Errorf("mnist: square root: eigendecomposition failed")
	}
	var u mat.Dense
	eig.VectorsTo(&u)
	vals := eig.Values(nil)
	for i, l := range vals {
		vals[i] = math.Sqrt(math.Max(l, 0))
	}
	var out mat.Dense
	out.Mul(&u, mat.NewDiagDense(len(vals), vals))
	out.Mul(&out, u.T())
	return &out, nil
}

func firsts(d [][]float64) []float64 {
	out := make([]float64, len(d))
	for i, r := range d {
		out[i] = r[0]
	}
	return out
}

// argmax is the index of v's largest element (the first of ties).
func argmax[T cmp.Ordered](v []T) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}
