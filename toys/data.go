// Package toys holds the toy problems: the 2-D data sets, their networks
// (score, DF-TM and centred DF-TM, committed in toys/checkpoints) and the
// d = 64 Gaussian mixture; ProblemConfig.Problem makes a data set a
// problem.Problem for the studies (Table 2 and the access comparison live
// in studies/access).
//
// The generators follow the FFJORD / Lu et al. (2022) toy distributions
// (the paper's appendix "Evaluation of NLL" follows Lu et al.). Every
// generator takes an explicit *rand.Rand; Sample takes a seed, and the same
// seed gives the same bytes.
package toys

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"gonum.org/v1/gonum/mat"
)

// Generator draws n points of a 2-D distribution as an [n, 2] matrix.
type Generator func(n int, rng *rand.Rand) *mat.Dense

// Generators maps each data set's name to its generator.
var Generators = map[string]Generator{
	"checkerboard": Checkerboard,
	"8gaussians":   EightGaussians,
	"moons":        TwoMoons,
	"rings":        Rings,
	"swissroll":    SwissRoll,
}

// Names lists the data sets in a fixed order.
func Names() []string {
	names := make([]string, 0, len(Generators))
	for n := range Generators {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// NewRNG is the generator every seeded function in toys uses: PCG seeded
// with (seed, a fixed stream constant).
func NewRNG(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x5eed_d0f0_70e5))
}

// Sample draws n points of the named data set with the given seed.
func Sample(name string, n int, seed uint64) (*mat.Dense, error) {
	g, ok := Generators[strings.ToLower(name)]
	if !ok {
		return nil, fmt.Errorf("toys: unknown data set %q (want one of %s)", name, strings.Join(Names(), ", "))
	}
	if n < 1 {
		return nil, fmt.Errorf("toys: need at least 1 sample, got %d", n)
	}
	return g(n, NewRNG(seed)), nil
}

// CheckerboardSide is the side of one square of the checkerboard; the board
// is 4×4 squares covering [−4, 4]², of which the 8 "black" ones carry mass.
const CheckerboardSide = 2.0

// InCheckerboard reports whether (x, y) lies on a black square of the
// board: inside [−4, 4]² with ⌊x/2⌋ + ⌊y/2⌋ even.
func InCheckerboard(x, y float64) bool {
	if x < -4 || x >= 4 || y < -4 || y >= 4 {
		return false
	}
	i := int(math.Floor(x / CheckerboardSide))
	j := int(math.Floor(y / CheckerboardSide))
	return (i+j)%2 == 0
}

// Checkerboard is uniform on the 8 black squares of a 4×4 board on [−4, 4]²
// (the paper's "chessboard"; FFJORD's checkerboard scaled by 2): x uniform on
// [−4, 4), y uniform on the two black squares of x's column.
func Checkerboard(n int, rng *rand.Rand) *mat.Dense {
	out := mat.NewDense(n, 2, nil)
	for i := 0; i < n; i++ {
		x := 8*rng.Float64() - 4
		col := int(math.Floor(x / CheckerboardSide)) // −2..1
		// black rows j have (col + j) even: j ∈ {−2, 0} or {−1, 1}
		j := 2*rng.IntN(2) - 2
		if (col+j)%2 != 0 {
			j++
		}
		y := (float64(j) + rng.Float64()) * CheckerboardSide
		out.Set(i, 0, x)
		out.Set(i, 1, y)
	}
	return out
}

// EightGaussians is an equal mixture of 8 isotropic Gaussians of standard
// deviation 0.5/√2 centred at 8 points on the circle of radius 4/√2.
func EightGaussians(n int, rng *rand.Rand) *mat.Dense {
	out := mat.NewDense(n, 2, nil)
	const r = 4 / math.Sqrt2
	for i := 0; i < n; i++ {
		a := float64(rng.IntN(8)) * math.Pi / 4
		out.Set(i, 0, r*math.Cos(a)+0.5*rng.NormFloat64()/math.Sqrt2)
		out.Set(i, 1, r*math.Sin(a)+0.5*rng.NormFloat64()/math.Sqrt2)
	}
	return out
}

// TwoMoons is sklearn's make_moons (noise 0.1) mapped by x ↦ 2x + (−1, −0.2)
// as in FFJORD: two interleaved half circles.
func TwoMoons(n int, rng *rand.Rand) *mat.Dense {
	out := mat.NewDense(n, 2, nil)
	for i := 0; i < n; i++ {
		a := math.Pi * rng.Float64()
		var x, y float64
		if rng.IntN(2) == 0 {
			x, y = math.Cos(a), math.Sin(a)
		} else {
			x, y = 1-math.Cos(a), 0.5-math.Sin(a)
		}
		x += 0.1 * rng.NormFloat64()
		y += 0.1 * rng.NormFloat64()
		out.Set(i, 0, 2*x-1)
		out.Set(i, 1, 2*y-0.2)
	}
	return out
}

// Rings is an equal mixture of 4 concentric circles of radii 0.75, 1.5,
// 2.25 and 3 with uniform angles and Gaussian noise of scale 0.08.
func Rings(n int, rng *rand.Rand) *mat.Dense {
	out := mat.NewDense(n, 2, nil)
	for i := 0; i < n; i++ {
		r := 0.75 * float64(1+rng.IntN(4))
		a := 2 * math.Pi * rng.Float64()
		out.Set(i, 0, r*math.Cos(a)+0.08*rng.NormFloat64())
		out.Set(i, 1, r*math.Sin(a)+0.08*rng.NormFloat64())
	}
	return out
}

// SwissRoll is sklearn's make_swiss_roll (noise 1) projected on its (x, z)
// plane and divided by 5, as in FFJORD: u = 1.5π(1 + 2U),
// (u cos u, u sin u)/5 + N(0, 0.2² I).
func SwissRoll(n int, rng *rand.Rand) *mat.Dense {
	out := mat.NewDense(n, 2, nil)
	for i := 0; i < n; i++ {
		u := 1.5 * math.Pi * (1 + 2*rng.Float64())
		out.Set(i, 0, (u*math.Cos(u)+rng.NormFloat64())/5)
		out.Set(i, 1, (u*math.Sin(u)+rng.NormFloat64())/5)
	}
	return out
}
