package ot

import (
	"context"
	"fmt"
	"time"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"gonum.org/v1/gonum/mat"
)

// Config is the whole OT experiment: Table 3 in both protocols, the figures
// and the studies beyond the paper.
type Config struct {
	Table3  Table3Config
	Beyond  BeyondConfig
	Figures FigureConfig
	// SkipBeyond and SkipFigures leave those parts out.
	SkipBeyond, SkipFigures bool
}

// FigureConfig sets the runs behind the figures.
type FigureConfig struct {
	Chains         int // chains of the curves and histograms
	ReferenceSteps int // RK4 steps on the Karras grid
	GridLines      int // lines of the x_T grid in each direction
	GridPoints     int // points per line
}

// Quick is small enough for CI and `dfx reproduce ot --quick`.
func Quick() Config {
	return Config{
		Table3:  Table3Config{Steps: []int{20, 100, 1000}, ReferenceSteps: 300, Chains: 64, PublishedChains: 1024, Seed: 1},
		Beyond:  BeyondConfig{Dims: []int{3, 5, 10}, Offsets: []float64{0, 1e-2, 0.1, 0.5}, Steps: 100, Chains: 64, Seed: 1},
		Figures: FigureConfig{Chains: 64, ReferenceSteps: 200, GridLines: 11, GridPoints: 40},
	}
}

// Full is the configuration of the committed figures: 256 chains per cell.
func Full() Config {
	return Config{
		Table3:  Table3Config{Steps: []int{20, 100, 1000}, ReferenceSteps: 500, Chains: DefaultChains, PublishedChains: 4096, Seed: 1},
		Beyond:  BeyondConfig{Dims: []int{3, 4, 5, 6, 8, 10}, Steps: 200, Chains: DefaultChains, Seed: 1},
		Figures: FigureConfig{Chains: DefaultChains, ReferenceSteps: 500, GridLines: 17, GridPoints: 60},
	}
}

// Curve is a mean asymmetry rate along the chains of one schedule.
type Curve struct {
	Schedule string
	X, Y     []float64 // time (or noise level) and mean rate
}

// Deformation is the image of a grid of x_T under the map x_T ↦ x_s.
type Deformation struct {
	Data   string
	Points [][]float64    // the data points
	Lines  [][][2]float64 // each line of the grid, mapped
	S      float64
}

// Result is what Run computed.
type Result struct {
	Config Config
	Rows   []Row
	Beyond []BeyondRow
	// CurvesPublished: published protocol, non-affine, mean off-diagonal rate
	// of the published matrix versus t. CurvesReference: converged
	// reference, mean I(Φ_t) versus the noise level σ(t)/α(t).
	CurvesPublished, CurvesReference []Curve
	// HistPublished / HistReference: per-chain rates (off-diagonal for the
	// published matrix, I(Φ) for the reference) per schedule, non-affine.
	HistPublished, HistReference map[string][]float64
	Deformations                 []Deformation
	Elapsed                      time.Duration
}

// Run computes everything the configuration asks for.
func Run(ctx context.Context, c Config) (*Result, error) {
	start := time.Now()
	res := &Result{Config: c}
	rows, err := Table3(ctx, c.Table3)
	if err != nil {
		return nil, err
	}
	res.Rows = rows
	if !c.SkipBeyond {
		if res.Beyond, err = Beyond(ctx, c.Beyond); err != nil {
			return nil, err
		}
	}
	if !c.SkipFigures {
		if err := res.figureData(ctx); err != nil {
			return nil, err
		}
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

func flatAsym(a []float64, c, d int, offDiag bool) float64 {
	m := mat.NewDense(d, d, a[c*d*d:(c+1)*d*d])
	return asym(m, offDiag)
}

// meanAsymObserver records the mean rate of rule 0 over the chains at every
// grid point, with x given by xOf(t).
func meanAsymObserver(cv *Curve, d int, offDiag bool, xOf func(t float64) float64) func(int, float64, *mat.Dense, [][]float64) {
	return func(_ int, t float64, x *mat.Dense, a [][]float64) {
		k, _ := x.Dims()
		s := 0.0
		for c := 0; c < k; c++ {
			s += flatAsym(a[0], c, d, offDiag)
		}
		cv.X = append(cv.X, xOf(t))
		cv.Y = append(cv.Y, s/float64(k))
	}
}

func (res *Result) figureData(ctx context.Context) error {
	fc := res.Config.Figures
	seed := res.Config.Table3.Seed
	res.HistPublished, res.HistReference = map[string][]float64{}, map[string][]float64{}
	pubCases, err := PublishedCases()
	if err != nil {
		return err
	}
	paperCases, err := PaperCases()
	if err != nil {
		return err
	}
	pgrid, err := PublishedGrid(19)
	if err != nil {
		return err
	}
	for _, sched := range Table3Schedules {
		pp, err := Published(sched)
		if err != nil {
			return err
		}
		cv := Curve{Schedule: sched}
		pubChains := fc.Chains
		if pc := res.Config.Table3.PublishedChains; pc > 0 {
			pubChains = pc
		}
		out, err := Test(ctx, Spec{Data: pubCases[2].Data, Schedule: pp, Grid: pgrid, Solver: DDIM, Rules: []Rule{PublishedRule},
			Chains: pubChains, Seed: seed, PriorStd: 1, Observe: meanAsymObserver(&cv, 2, true, func(t float64) float64 { return t })})
		if err != nil {
			return err
		}
		res.CurvesPublished = append(res.CurvesPublished, cv)
		for _, v := range out.Verdicts[0] {
			res.HistPublished[sched] = append(res.HistPublished[sched], v.AsymOffDiag)
		}
		s, err := schedule.ByName(sched, schedule.Params{})
		if err != nil {
			return err
		}
		p := schedule.Continuous{Schedule: s}
		grid, err := Grid(p, schedule.GridKarras, 0, fc.ReferenceSteps)
		if err != nil {
			return err
		}
		cr := Curve{Schedule: sched}
		noise := func(t float64) float64 { return s.Sigma(t) / s.Alpha(t) }
		out, err = Test(ctx, Spec{Data: paperCases[2].Data, Schedule: p, Grid: grid, Solver: RK4, Chains: fc.Chains, Seed: seed,
			Observe: meanAsymObserver(&cr, 2, false, noise)})
		if err != nil {
			return err
		}
		res.CurvesReference = append(res.CurvesReference, cr)
		for _, v := range out.Verdicts[0] {
			res.HistReference[sched] = append(res.HistReference[sched], v.Asym)
		}
	}
	for _, dc := range paperCases[1:] {
		d, err := deformation(ctx, dc, fc)
		if err != nil {
			return err
		}
		res.Deformations = append(res.Deformations, d)
	}
	return nil
}

// deformation maps a grid of x_T ∈ [−2.5, 2.5]² (VP, σ_T ≈ 1) to the time
// where σ = 0.2, by RK4 on the Karras grid.
func deformation(ctx context.Context, dc DataCase, fc FigureConfig) (Deformation, error) {
	s := schedule.DefaultVP()
	lo, hi := s.Interval()
	end, err := schedule.SigmaInverse(s, 0.2, lo, hi)
	if err != nil {
		return Deformation{}, err
	}
	p := schedule.Continuous{Schedule: s}
	grid, err := Grid(p, schedule.GridKarras, end, max(fc.ReferenceSteps/2, 20))
	if err != nil {
		return Deformation{}, err
	}
	nl, np := max(fc.GridLines, 2), max(fc.GridPoints, 2)
	x0 := mat.NewDense(2*nl*np, 2, nil)
	const r = 2.5
	row := 0
	for dir := 0; dir < 2; dir++ {
		for l := 0; l < nl; l++ {
			u := -r + 2*r*float64(l)/float64(nl-1)
			for q := 0; q < np; q++ {
				v := -r + 2*r*float64(q)/float64(np-1)
				if dir == 0 {
					x0.SetRow(row, []float64{u, v})
				} else {
					x0.SetRow(row, []float64{v, u})
				}
				row++
			}
		}
	}
	in := &Integration{Mixture: dc.Data, Schedule: p, Grid: grid, Solver: RK4}
	ch, err := in.Run(ctx, x0)
	if err != nil {
		return Deformation{}, err
	}
	d := Deformation{Data: dc.Name, S: end}
	for i := 0; i < 2*nl; i++ {
		line := make([][2]float64, np)
		for q := range line {
			line[q] = [2]float64{ch.X.At(i*np+q, 0), ch.X.At(i*np+q, 1)}
		}
		d.Lines = append(d.Lines, line)
	}
	if dm, ok := dc.Data.(interface{ Data() *mat.Dense }); ok {
		y := dm.Data()
		n, _ := y.Dims()
		for i := 0; i < n; i++ {
			d.Points = append(d.Points, []float64{y.At(i, 0), y.At(i, 1)})
		}
	}
	return d, nil
}

// Headline returns, per schedule, the non-affine published-protocol rate in
// the script's own metric (off-diagonal I of the published matrix, mean ±
// std over chains, in %) next to the paper's figure, and the fraction of
// chains at or above the paper's figure (from the figure runs, if any).
func (res *Result) Headline() string {
	out := "schedule  published script's metric (mean ± std)  paper    chains ≥ paper\n"
	for _, r := range res.Rows {
		if r.Protocol == ProtocolPublished && r.Data == "non-affine" && r.Rule == PublishedRule {
			frac := "—"
			if h := res.HistPublished[r.Schedule]; len(h) > 0 {
				n := 0
				for _, v := range h {
					if 100*v >= r.Paper {
						n++
					}
				}
				frac = fmt.Sprintf("%.0f%%", 100*float64(n)/float64(len(h)))
			}
			out += fmt.Sprintf("%-8s  %6.2f ± %5.2f %%                     %6.2f %%  %s\n", r.Schedule,
				100*r.Summary.AsymOffDiag.Mean, 100*r.Summary.AsymOffDiag.Std, r.Paper, frac)
		}
	}
	return out
}
