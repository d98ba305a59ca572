package mixture

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/mat"
)

// FitOptions says how Fit fits a Gaussian mixture to data.
type FitOptions struct {
	// Components is K, the number of Gaussians (per class when PerClass).
	Components int
	// PerClass fits Components Gaussians to each label's rows separately
	// and labels them (Restrict gives the class-conditional mixture); the
	// weights are the overall row fractions, so the whole mixture is the
	// unconditional fit.
	PerClass bool
	// Rank r of each covariance: 0 or ≥ d keeps it full; 1 ≤ r < d keeps
	// the r largest eigenpairs and replaces the others by their mean
	// (probabilistic PCA: U diag(λ) Uᵀ + ρ(I − U Uᵀ)).
	Rank int
	// Shrink in [0, 1] pulls each sample covariance toward its diagonal:
	// Σ = (1 − Shrink) S + Shrink diag(S).
	Shrink float64
	// Floor is added to every covariance's diagonal (≥ 0).
	Floor float64
	// Idle, with 1 ≤ Rank < d, is a variance threshold: a component's
	// coordinates whose variance is below it (pixels that never vary in the
	// component but for dequantisation noise, e.g. an image's empty border)
	// are modelled apart, independent with their mean variance, and the
	// rank-r basis and the rest's variance are fitted to the others only
	// (0: none).
	Idle float64
	// Iters bounds the k-means (Lloyd) iterations (0: 25).
	Iters int
	// Seed seeds the k-means++ initialisation.
	Seed uint64
}

// FitInfo reports what Fit did.
type FitInfo struct {
	Sizes      []int     // rows assigned to each component
	Iterations []int     // k-means iterations run (one entry per class, or one)
	Inertia    []float64 // final mean squared distance to the assigned mean (same)
}

// Fit fits a Gaussian mixture to the rows of data ([N, d]) by k-means
// (k-means++ start, Lloyd iterations; hard assignment, no EM): each
// component's mean and covariance are those of its rows (the covariance
// shrunk toward its diagonal, floored, optionally truncated to rank r) and
// its weight is its share of the rows. labels (one per row, ≥ 0) is needed
// only with PerClass.
func Fit(data *mat.Dense, labels []int, opt FitOptions) (*Gaussian, *FitInfo, error) {
	return FitContext(context.Background(), data, labels, opt)
}

// FitContext is Fit that ctx cancels: it is checked before every k-means
// iteration and every component's covariance, so that a fit of a minute
// stops within a fraction of a second, returning ctx's error.
func FitContext(ctx context.Context, data *mat.Dense, labels []int, opt FitOptions) (*Gaussian, *FitInfo, error) {
	if data == nil || data.IsEmpty() {
		return nil, nil, fmt.Errorf("mixture: Fit: no data: %w", ErrInput)
	}
	n, d := data.Dims()
	if err := checkFinite("data", data); err != nil {
		return nil, nil, err
	}
	if err := opt.check(); err != nil {
		return nil, nil, err
	}
	if opt.Iters <= 0 {
		opt.Iters = 25
	}
	groups, keys, err := groupRows(n, labels, opt.PerClass)
	if err != nil {
		return nil, nil, err
	}
	info := &FitInfo{}
	var comps []Component
	var classes []int
	for gi, key := range keys {
		rows := groups[key]
		if len(rows) < opt.Components {
			return nil, nil, fmt.Errorf("mixture: Fit: %d rows (label %d) for %d components: %w", len(rows), key, opt.Components, ErrInput)
		}
		x := mat.NewDense(len(rows), d, nil)
		for i, r := range rows {
			x.SetRow(i, data.RawRowView(r))
		}
		assign, iters, inertia, err := kmeans(ctx, x, opt.Components, opt.Iters, opt.Seed+uint64(gi)*0x9e3779b97f4a7c15)
		if err != nil {
			return nil, nil, err
		}
		info.Iterations = append(info.Iterations, iters)
		info.Inertia = append(info.Inertia, inertia)
		for c, m := range clusterMembers(assign, opt.Components) {
			if len(m) == 0 { // re-seeded in the last iteration, left empty
				continue
			}
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
			comp, err := fitComponent(x, m, opt)
			if err != nil {
				return nil, nil, fmt.Errorf("mixture: Fit: component %d (label %d): %w", c, key, err)
			}
			comp.Weight = float64(len(m)) / float64(n)
			comps = append(comps, comp)
			info.Sizes = append(info.Sizes, len(m))
			classes = append(classes, key)
		}
	}
	g, err := NewLowRank(comps)
	if err != nil {
		return nil, nil, err
	}
	if opt.PerClass {
		if err := g.SetClasses(classes); err != nil {
			return nil, nil, err
		}
	}
	return g, info, nil
}

// check reports the first option out of range.
func (opt FitOptions) check() error {
	if opt.Components < 1 {
		return fmt.Errorf("mixture: Fit: %d components, want ≥ 1: %w", opt.Components, ErrInput)
	}
	if math.IsNaN(opt.Shrink) || opt.Shrink < 0 || opt.Shrink > 1 {
		return fmt.Errorf("mixture: Fit: shrinkage %g outside [0, 1]: %w", opt.Shrink, ErrInput)
	}
	if math.IsNaN(opt.Floor) || math.IsInf(opt.Floor, 0) || opt.Floor < 0 {
		return fmt.Errorf("mixture: Fit: floor %g, want finite and ≥ 0: %w", opt.Floor, ErrInput)
	}
	if opt.Rank < 0 {
		return fmt.Errorf("mixture: Fit: rank %d, want ≥ 0: %w", opt.Rank, ErrInput)
	}
	return nil
}

// groupRows are the row indices of each label (perClass) or of all n rows
// under the key −1, and the keys in ascending order.
func groupRows(n int, labels []int, perClass bool) (map[int][]int, []int, error) {
	groups := map[int][]int{}
	if perClass {
		if len(labels) != n {
			return nil, nil, fmt.Errorf("mixture: Fit: %d labels for %d rows: %w", len(labels), n, ErrInput)
		}
		for i, l := range labels {
			if l < 0 {
				return nil, nil, fmt.Errorf("mixture: Fit: label %d of row %d is negative: %w", l, i, ErrInput)
			}
			groups[l] = append(groups[l], i)
		}
	} else {
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		groups[-1] = all
	}
	keys := make([]int, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return groups, keys, nil
}

// clusterMembers are the rows assigned to each of k clusters.
func clusterMembers(assign []int, k int) [][]int {
	members := make([][]int, k)
	for i, c := range assign {
		members[c] = append(members[c], i)
	}
	return members
}

// fitComponent is the mean and (shrunk, floored, truncated) covariance of
// rows m of x.
func fitComponent(x *mat.Dense, m []int, opt FitOptions) (Component, error) {
	_, d := x.Dims()
	if len(m) == 0 {
		return Component{}, fmt.Errorf("no rows assigned: %w", ErrInput)
	}
	mu, s := meanAndScatter(x, m)
	nm := len(m)
	low := opt.Rank > 0 && opt.Rank < d
	var idle, active []int
	nu := 0.0
	if low {
		idle, active, nu = splitIdle(s, d, nm, opt)
	} else {
		for j := 0; j < d; j++ {
			active = append(active, j)
		}
	}
	na := len(active)
	cov := activeCovariance(s, active, d, nm, opt)
	u, lam, err := eigenPSD(cov, "covariance")
	if err != nil {
		return Component{}, err
	}
	if !low {
		return Component{Mean: mu, Basis: u, Lambda: lam}, nil
	}
	basis, lam, rho := truncateRank(u, lam, active, d, min(opt.Rank, na))
	return Component{Mean: mu, Basis: basis, Lambda: lam, Rest: rho, Idle: idle, IdleVar: nu}, nil
}

// meanAndScatter are the mean μ of rows m of x and their scatter matrix
// S = Σ (x_i − μ)(x_i − μ)ᵀ, row-major [d, d].
func meanAndScatter(x *mat.Dense, m []int) (mu, s []float64) {
	_, d := x.Dims()
	mu = make([]float64, d)
	for _, i := range m {
		for j, v := range x.RawRowView(i) {
			mu[j] += v
		}
	}
	for j := range mu {
		mu[j] /= float64(len(m))
	}
	// Centred rows, transposed: ct [d, n]; S = ct ctᵀ.
	nm := len(m)
	ct := make([]float64, d*nm)
	for c, i := range m {
		for j, v := range x.RawRowView(i) {
			ct[j*nm+c] = v - mu[j]
		}
	}
	s = make([]float64, d*d)
	gemmFn(blas.NoTrans, blas.Trans, 1, general(d, nm, ct), general(d, nm, ct), 0, general(d, d, s))
	return mu, s
}

// splitIdle splits the coordinates by their floored variance (scatter s of
// nm rows) into idle ones (below opt.Idle) and active ones, keeping at
// least opt.Rank active, and returns the idle coordinates' mean variance.
func splitIdle(s []float64, d, nm int, opt FitOptions) (idle, active []int, nu float64) {
	for j := 0; j < d; j++ {
		v := s[j*d+j]/float64(nm) + opt.Floor
		if opt.Idle > 0 && v < opt.Idle {
			idle = append(idle, j)
			nu += v
		} else {
			active = append(active, j)
		}
	}
	// Keep at least r coordinates active (the most variable idle ones), so
	// that every component has rank r: a cluster of one row or of identical
	// rows would otherwise leave none.
	if len(active) < opt.Rank {
		sort.Slice(idle, func(a, b int) bool { return s[idle[a]*d+idle[a]] > s[idle[b]*d+idle[b]] })
		move := opt.Rank - len(active)
		for _, j := range idle[:move] {
			nu -= s[j*d+j]/float64(nm) + opt.Floor
		}
		active = append(active, idle[:move]...)
		idle = idle[move:]
		sort.Ints(active)
		sort.Ints(idle)
	}
	if len(idle) > 0 {
		nu /= float64(len(idle))
	}
	return idle, active, nu
}

// activeCovariance is the covariance of the active coordinates from the
// scatter s of nm rows: symmetrised, off-diagonal shrunk by 1 − opt.Shrink,
// diagonal floored by opt.Floor.
func activeCovariance(s []float64, active []int, d, nm int, opt FitOptions) *mat.SymDense {
	na := len(active)
	cov := mat.NewSymDense(na, nil)
	for a, i := range active {
		for b := a; b < na; b++ {
			j := active[b]
			v := (s[i*d+j] + s[j*d+i]) / (2 * float64(nm))
			if a != b {
				v *= 1 - opt.Shrink
			} else {
				v += opt.Floor
			}
			cov.SetSym(a, b, v)
		}
	}
	return cov
}

// truncateRank keeps the r largest eigenpairs (u, lam ascending, over the
// active coordinates) as a d×r basis and their variances, and returns the
// mean ρ of the other eigenvalues.
func truncateRank(u *mat.Dense, lam []float64, active []int, d, r int) (*mat.Dense, []float64, float64) {
	na := len(active)
	rho := 0.0
	for _, l := range lam[:na-r] {
		rho += l
	}
	if na > r {
		rho /= float64(na - r)
	}
	basis := mat.NewDense(d, r, nil)
	for a, i := range active {
		for l := 0; l < r; l++ {
			basis.Set(i, l, u.At(a, na-r+l))
		}
	}
	return basis, slices.Clone(lam[na-r:]), rho
}

// kmeans clusters the rows of x into k groups (k-means++ start, at most
// iters Lloyd iterations, squared distances as blocked products) and
// returns each row's cluster, the iterations run and the final inertia
// (mean squared distance, of the last assignment). An emptied cluster is re-seeded with the row
// farthest from its mean. ctx is checked before every iteration.
func kmeans(ctx context.Context, x *mat.Dense, k, iters int, seed uint64) ([]int, int, float64, error) {
	n, _ := x.Dims()
	rng := rand.New(rand.NewPCG(seed, 0x6b6d65616e73))
	norms := make([]float64, n)
	for i := range norms {
		r := x.RawRowView(i)
		norms[i] = dot(r, r)
	}
	cent := kmeansPlusPlus(x, k, rng)
	assign := make([]int, n)
	best := make([]float64, n)
	prod := make([]float64, n*k)
	it := 0
	for it = 1; it <= iters; it++ {
		if err := ctx.Err(); err != nil {
			return nil, 0, 0, err
		}
		assignNearest(x, cent, norms, prod, assign, best)
		if moveCentres(x, cent, assign, best) == 0 {
			break
		}
	}
	it = min(it, iters)
	inertia := 0.0
	for _, v := range best {
		inertia += v
	}
	return assign, it, inertia / float64(n), nil
}

// kmeansPlusPlus draws k initial centres from the rows of x: the first
// uniformly, each next one ∝ its squared distance to the nearest centre.
func kmeansPlusPlus(x *mat.Dense, k int, rng *rand.Rand) *mat.Dense {
	n, d := x.Dims()
	cent := mat.NewDense(k, d, nil)
	dist := make([]float64, n)
	for i := range dist {
		dist[i] = math.Inf(1)
	}
	first := rng.IntN(n)
	cent.SetRow(0, x.RawRowView(first))
	for c := 1; c < k; c++ {
		prev := cent.RawRowView(c - 1)
		total := 0.0
		for i := range dist {
			dist[i] = math.Min(dist[i], sqDist(x.RawRowView(i), prev, 1))
			total += dist[i]
		}
		u := rng.Float64() * total
		pick := n - 1
		for i, v := range dist {
			if u < v {
				pick = i
				break
			}
			u -= v
		}
		cent.SetRow(c, x.RawRowView(pick))
	}
	return cent
}

// assignNearest sets each row's nearest centre and squared distance to it,
// ‖x‖² − 2 x·c + ‖c‖² with the products X Cᵀ as one GEMM into prod [n, k].
func assignNearest(x, cent *mat.Dense, norms, prod []float64, assign []int, best []float64) {
	n, _ := x.Dims()
	k, _ := cent.Dims()
	cn := make([]float64, k)
	for c := range cn {
		r := cent.RawRowView(c)
		cn[c] = dot(r, r)
	}
	gemmFn(blas.NoTrans, blas.Trans, 1, denseGeneral(x), denseGeneral(cent), 0, general(n, k, prod))
	parallelRows(n, runtime.GOMAXPROCS(0), func(i int) {
		bi, bd := 0, math.Inf(1)
		for c := 0; c < k; c++ {
			if v := norms[i] - 2*prod[i*k+c] + cn[c]; v < bd {
				bi, bd = c, v
			}
		}
		best[i] = math.Max(bd, 0)
		assign[i] = bi
	})
}

// moveCentres moves each centre to the mean of its rows, re-seeds an empty
// one with the worst-fitted row, and returns how many coordinates changed.
func moveCentres(x, cent *mat.Dense, assign []int, best []float64) int {
	k, d := cent.Dims()
	sums := mat.NewDense(k, d, nil)
	counts := make([]int, k)
	for i, c := range assign {
		counts[c]++
		row := sums.RawRowView(c)
		for j, v := range x.RawRowView(i) {
			row[j] += v
		}
	}
	changed := 0
	for c := 0; c < k; c++ {
		if counts[c] == 0 { // re-seed with the worst-fitted row
			far := 0
			for i, v := range best {
				if v > best[far] {
					far = i
				}
			}
			cent.SetRow(c, x.RawRowView(far))
			best[far] = 0
			changed++
			continue
		}
		row, old := sums.RawRowView(c), cent.RawRowView(c)
		for j := range row {
			v := row[j] / float64(counts[c])
			if v != old[j] {
				changed++
			}
			old[j] = v
		}
	}
	return changed
}
