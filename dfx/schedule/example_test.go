package schedule_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"

	"github.com/dfx-lab/dfx/dfx/schedule"
)

// The coefficients of one time, what every model and solver is keyed by:
// α, σ, the drift f = α'/α and the diffusion g² = 2σσ' − 2fσ², here for the
// VP schedule at t = 0.5; and a grid of 4 steps uniform in log σ, from
// noise (t = 1) to data (t = 10⁻³).
func ExampleAt() {
	s := schedule.DefaultVP()
	c, err := schedule.At(s, 0.5)
	if err != nil {
		panic(err)
	}
	fmt.Printf("α = %.4f, σ = %.4f, f = %.4f, g² = %.4f\n", c.Alpha, c.Sigma, c.F, c.G2)
	grid, err := schedule.TimeGrid(s, schedule.GridLogSigma, 1e-3, 1, 4)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%.4f\n", grid)
	// Output:
	// α = 0.2812, σ = 0.9597, f = -5.0250, g² = 10.0500
	// [1.0000 0.0993 0.0279 0.0065 0.0010]
}

// The VP schedule preserves variance: α(t)² + σ(t)² = 1 at every t, and its
// squared diffusion is the β(t) of DDPM in continuous time, g² = β.
func ExampleVP() {
	s := schedule.DefaultVP()
	for _, t := range []float64{1e-3, 0.25, 0.5, 1} {
		a, sg := s.Alpha(t), s.Sigma(t)
		fmt.Printf("t = %.3f: α = %.4f, σ = %.4f, α²+σ² = %.4f, g² = %.4f, β = %.4f\n",
			t, a, sg, a*a+sg*sg, schedule.G2(s, t), s.Beta(t))
	}
	// Output:
	// t = 0.001: α = 0.9999, σ = 0.0105, α²+σ² = 1.0000, g² = 0.1199, β = 0.1199
	// t = 0.250: α = 0.7237, σ = 0.6902, α²+σ² = 1.0000, g² = 5.0750, β = 5.0750
	// t = 0.500: α = 0.2812, σ = 0.9597, α²+σ² = 1.0000, g² = 10.0500, β = 10.0500
	// t = 1.000: α = 0.0066, σ = 1.0000, α²+σ² = 1.0000, g² = 20.0000, β = 20.0000
}

// The VE schedule keeps α = 1 and grows σ geometrically,
// σ(t) = σ_min (σ_max/σ_min)^t, so f = 0 and g² = dσ²/dt = 2σ² log(σ_max/σ_min).
func ExampleVE() {
	s := schedule.DefaultVE()
	for _, t := range []float64{0, 0.5, 1} {
		sg := s.Sigma(t)
		closed := s.SigmaMin * math.Pow(s.SigmaMax/s.SigmaMin, t)
		g2 := 2 * sg * sg * math.Log(s.SigmaMax/s.SigmaMin)
		fmt.Printf("t = %.1f: α = %.0f, σ = %.4f (closed form %.4f), f = %.0f, g² = %.5g (closed form %.5g)\n",
			t, s.Alpha(t), sg, closed, schedule.F(s, t), schedule.G2(s, t), g2)
	}
	// Output:
	// t = 0.0: α = 1, σ = 0.0100 (closed form 0.0100), f = 0, g² = 0.0017034 (closed form 0.0017034)
	// t = 0.5: α = 1, σ = 0.7071 (closed form 0.7071), f = 0, g² = 8.5172 (closed form 8.5172)
	// t = 1.0: α = 1, σ = 50.0000 (closed form 50.0000), f = 0, g² = 42586 (closed form 42586)
}

// The sub-VP schedule shares VP's α and takes σ = 1 − α², so α² + σ² < 1
// between the ends.
func ExampleSubVP() {
	s, vp := schedule.DefaultSubVP(), schedule.DefaultVP()
	for _, t := range []float64{0.1, 0.5, 1} {
		a, sg := s.Alpha(t), s.Sigma(t)
		fmt.Printf("t = %.1f: α = %.4f (VP %.4f), σ = %.4f, 1 − α² = %.4f, α²+σ² = %.4f\n",
			t, a, vp.Alpha(t), sg, 1-a*a, a*a+sg*sg)
	}
	// Output:
	// t = 0.1: α = 0.9467 (VP 0.9467), σ = 0.1037, 1 − α² = 0.1037, α²+σ² = 0.9070
	// t = 0.5: α = 0.2812 (VP 0.2812), σ = 0.9209, 1 − α² = 0.9209, α²+σ² = 0.9272
	// t = 1.0: α = 0.0066 (VP 0.0066), σ = 1.0000, 1 − α² = 1.0000, α²+σ² = 1.0000
}

// The drift f = d log α/dt and the diffusion g² = dσ²/dt − 2fσ² (eq.
// diffusion_sde), checked against central finite differences of α and σ.
func ExampleG2() {
	s := schedule.DefaultVP()
	t, h := 0.3, 1e-6
	fd := (math.Log(s.Alpha(t+h)) - math.Log(s.Alpha(t-h))) / (2 * h)
	dsig2 := (math.Pow(s.Sigma(t+h), 2) - math.Pow(s.Sigma(t-h), 2)) / (2 * h)
	g2fd := dsig2 - 2*fd*math.Pow(s.Sigma(t), 2)
	fmt.Printf("f = %.6f (finite differences %.6f)\n", schedule.F(s, t), fd)
	fmt.Printf("g² = %.6f (finite differences %.6f)\n", schedule.G2(s, t), g2fd)
	// Output:
	// f = -3.035000 (finite differences -3.035000)
	// g² = 6.070000 (finite differences 6.070000)
}

// The log-SNR λ = log(α/σ) decreases in t; LogSNRInverse and SigmaInverse
// find the time of a given λ or σ by bisection.
func ExampleLogSNRInverse() {
	s := schedule.DefaultVP()
	lo, hi := s.Interval()
	l := schedule.LogSNR(s, 0.4)
	t, err := schedule.LogSNRInverse(s, l, lo, hi)
	if err != nil {
		panic(err)
	}
	ts, err := schedule.SigmaInverse(s, s.Sigma(0.4), lo, hi)
	if err != nil {
		panic(err)
	}
	fmt.Printf("λ(0.4) = %.4f, back to t = %.6f; σ(0.4) = %.4f, back to t = %.6f\n", l, t, s.Sigma(0.4), ts)
	// Output:
	// λ(0.4) = -0.7072, back to t = 0.400000; σ(0.4) = 0.8969, back to t = 0.400000
}

// The prior log-density log N(x; 0, σ² I) = −(d/2) log 2π − d log σ − ‖x‖²/(2σ²),
// against its closed form for one point in d = 3.
func ExamplePriorLogProb() {
	c := schedule.Coefficients{Sigma: 2}
	x := mat.NewDense(1, 3, []float64{1, -2, 0.5})
	sq := floats.Dot(x.RawRowView(0), x.RawRowView(0))
	closed := -1.5*math.Log(2*math.Pi) - 3*math.Log(2) - sq/8
	fmt.Printf("log N = %.6f (closed form %.6f)\n", schedule.PriorLogProb(c, x)[0], closed)
	// Output:
	// log N = -5.492507 (closed form -5.492507)
}

// SamplePrior draws x_T ~ N(0, σ_T² I): the same generator state gives the
// same points, and the sample's moments approach 0 and σ_T².
func ExampleSamplePrior() {
	c := schedule.Prior(schedule.DefaultVE())
	x := schedule.SamplePrior(c, 20000, 1, rand.New(rand.NewPCG(1, 2)))
	y := schedule.SamplePrior(c, 20000, 1, rand.New(rand.NewPCG(1, 2)))
	col := mat.Col(nil, 0, x)
	mean, sd := stat.MeanStdDev(col, nil)
	fmt.Printf("σ_T = %.0f; same seed, same points: %t\n", c.Sigma, mat.Equal(x, y))
	fmt.Printf("sample mean %.1f, sample sd %.1f\n", mean, sd)
	// Output:
	// σ_T = 50; same seed, same points: true
	// sample mean 0.0, sample sd 50.0
}

// A DDPM β table: ᾱ_k = Π_{j≤k}(1 − β_j), and at every node α_k² + σ_k² = 1.
func ExampleNewDDPM() {
	d, err := schedule.NewDDPM([]float64{0.1, 0.2, 0.3, 0.4})
	if err != nil {
		panic(err)
	}
	prod := 1.0
	for k := range d.K() {
		prod *= 1 - d.Betas[k]
		t := float64(k) / float64(d.K())
		a, s := d.Alpha(t), d.Sigma(t)
		fmt.Printf("k = %d: ᾱ = %.4f (product %.4f), α²+σ² = %.4f\n", k, d.AlphaBar(k), prod, a*a+s*s)
	}
	// Output:
	// k = 0: ᾱ = 0.9000 (product 0.9000), α²+σ² = 1.0000
	// k = 1: ᾱ = 0.7200 (product 0.7200), α²+σ² = 1.0000
	// k = 2: ᾱ = 0.5040 (product 0.5040), α²+σ² = 1.0000
	// k = 3: ᾱ = 0.3024 (product 0.3024), α²+σ² = 1.0000
}

// New builds a schedule by name; a parameter it does not take is an error
// rather than silently ignored.
func ExampleNew() {
	s, err := schedule.New("vp", map[string]float64{schedule.ParamBetaMax: 10})
	if err != nil {
		panic(err)
	}
	fmt.Println(s)
	_, err = schedule.New("ve", map[string]float64{schedule.ParamBetaMax: 10})
	fmt.Println(err != nil, schedule.Takers(schedule.ParamBetaMax))
	// Output:
	// VP(β_min=0.1, β_max=10, t∈[1e-05,1])
	// true [vp subvp]
}

// A Table answers only at its nodes: a solver whose stages fall between
// them (RK4's midpoints) fails instead of interpolating.
func ExampleTable() {
	s := schedule.DefaultVP()
	var nodes []schedule.Coefficients
	for _, t := range []float64{0.25, 0.5, 0.75} {
		c, _ := schedule.At(s, t)
		nodes = append(nodes, c)
	}
	tb, err := schedule.NewTable("vp-3", nodes)
	if err != nil {
		panic(err)
	}
	c, err := tb.At(0.5)
	fmt.Printf("at 0.5: σ = %.4f, %v\n", c.Sigma, err)
	_, err = tb.At(0.375)
	fmt.Println("at 0.375:", errors.Is(err, schedule.ErrTime))
	// Output:
	// at 0.5: σ = 0.9597, <nil>
	// at 0.375: true
}

// The grids a solver walks from noise to data, 4 steps each on the VE
// schedule: uniform in t, uniform in log σ (the same grid here, since VE's
// log σ is linear in t) and Karras et al.'s ρ = 7, which spends more steps
// at small σ.
func ExampleTimeGrid() {
	s := schedule.DefaultVE()
	for _, kind := range []string{schedule.GridUniform, schedule.GridLogSigma, schedule.GridKarras} {
		g, err := schedule.TimeGrid(s, kind, 1e-3, 1, 4)
		if err != nil {
			panic(err)
		}
		sig := make([]float64, len(g))
		for i, t := range g {
			sig[i] = s.Sigma(t)
		}
		fmt.Printf("%-8s t %.3f σ %.3f\n", kind, g, sig)
	}
	// Output:
	// uniform  t [1.000 0.750 0.500 0.251 0.001] σ [50.000 5.959 0.710 0.085 0.010]
	// logsigma t [1.000 0.750 0.501 0.251 0.001] σ [50.000 5.959 0.710 0.085 0.010]
	// karras   t [1.000 0.841 0.644 0.384 0.001] σ [50.000 12.911 2.406 0.263 0.010]
}
