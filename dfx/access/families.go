package access

import "github.com/dfx-lab/dfx/dfx/score"

// Names of the families this package registers (Family.Name, Spec.Family):
// the exact VJP trace, Hutchinson, Hutch++, DF-TM and centred DF-TM; the
// VJP and DF-EA operators.
const (
	VJPExactFamily   = "vjp-exact"
	HutchinsonFamily = "hutchinson"
	HutchPPFamily    = "hutch++"
	DFTMFamily       = "df-tm"
	DFTMCFamily      = "df-tm-c"
	VJPMatVecFamily  = "vjp-matvec"
	DFEAFamily       = "df-ea"
)

// The families this package registers. The labels "vjp" and "dfea" are
// the names tables and work records have always printed.
func init() {
	RegisterTrace(TraceFamily{Name: VJPExactFamily, Aliases: []string{"vjp"}, Label: "vjp", Needs: NeedsNet,
		Doc: "the network's exact trace by d VJPs (eq. nll_VJP)",
		New: func(_ int, env Env) (score.TraceEstimator, error) { return NewVJPTrace(env.Net, env.ExactRows) }})
	RegisterTrace(TraceFamily{Name: HutchinsonFamily, Arg: "the number of probes", Random: true, Needs: NeedsNet,
		Doc: "Hutchinson with K Rademacher probes",
		New: func(k int, env Env) (score.TraceEstimator, error) {
			h, err := NewHutchinson(env.Net, k, Rademacher, env.Seed)
			if err == nil && env.ProbeRows > 0 {
				h.SetMaxRows(env.ProbeRows)
			}
			return h, err
		}})
	RegisterTrace(TraceFamily{Name: HutchPPFamily, Aliases: []string{"hutchpp"}, MinK: 3, Random: true, Needs: NeedsNet,
		Arg: "the number of matvecs, a third each for the sketch, its range and the residual", Doc: "Hutch++ with K matvecs",
		New: func(k int, env Env) (score.TraceEstimator, error) {
			h, err := NewHutchPP(env.Net, k, env.Seed)
			if err == nil && env.ProbeRows > 0 {
				h.SetMaxRows(env.ProbeRows)
			}
			return h, err
		}})
	RegisterTrace(TraceFamily{Name: DFTMFamily, Aliases: []string{"dftm"}, Needs: NeedsNet | NeedsT,
		Doc: "DF trace matching, one pass of ε_θ and t_θ (eq. trace_appro)",
		New: func(_ int, env Env) (score.TraceEstimator, error) { return NewDFTM(env.Net) }})
	RegisterTrace(TraceFamily{Name: DFTMCFamily, Aliases: []string{"dftm-c", "dftmc"}, Needs: NeedsNet | NeedsNu,
		Doc: "centred DF trace matching, one pass of ν_θ",
		New: func(_ int, env Env) (score.TraceEstimator, error) { return NewDFTMCentred(env.Net) }})

	RegisterOperator(OperatorFamily{Name: VJPMatVecFamily, Aliases: []string{"vjp"}, Label: "vjp", Needs: NeedsNet,
		Doc: "F v by one VJP of the network (eq. Adjoint_VJP)",
		New: func(_ int, env Env) (score.FisherOperator, error) { return NewVJPMatVec(env.Net) }})
	RegisterOperator(OperatorFamily{Name: DFEAFamily, Aliases: []string{"dfea"}, Label: "dfea",
		Doc: "DF endpoint approximation (eq. EA_approx); without a network, from the sampler's denoiser",
		New: func(_ int, env Env) (score.FisherOperator, error) {
			if env.Net == nil {
				return DFEA{}, nil
			}
			return NewDFEA(env.Net)
		}})
}
