// Package dfx indexes the paper "Efficiently Access Diffusion Fisher:
// Within the Outer Product Span Space" (ICML 2025) against the code that
// implements it. The library lives in the sub-packages (schedule, mixture,
// access, pfode, likelihood, adjoint, report, notebook, plotx); models holds the
// networks and the top-level packages toys, ot and mnist the experiments.
//
// Every label of the paper that the code implements, and where (the test
// beside this file checks that each named identifier exists):
//
//	label                         what                                          code
//	eq. diffusion_kernel          x_t = α(t) x₀ + σ(t) ε                        schedule.Schedule, schedule.At
//	eq. fisher_def                F = −∇²log q_t                                mixture.Mixture
//	eq. PFODE                     dx/dt = f x − ½ g² ∇log q_t                   pfode.Velocity, pfode.VelocityFromEps
//	eq. dpm_objective             denoising score matching                      models.NewTrainer (models.DSM)
//	Prop. analytic_dirac          exact F of a Dirac mixture                    mixture.NewDirac, mixture.Dirac
//	Prop. analytic_general        exact F of a Gaussian mixture                 mixture.NewGaussian, mixture.Gaussian
//	Prop. optimal_y               ȳ = E[x₀ | x_t], the denoiser                models.Denoiser, access.EpsFromDenoiser
//	Prop. optimal_t               t* = E[‖x₀‖² | x_t]/d, DF-TM's target          models.TraceNet (models.DFTM)
//	Algorithm tnet                training the DF-TM network                    models.NewTrainer (models.DFTM)
//	Prop. trace_matching          tr F from t and ȳ                             access.DFTM
//	eq. trace_appro               DF-TM trace                                   access.DFTM, access.DFTMTraceGraph
//	Prop. error_bound_trace       DF-TM error bound (corrected: see access.DFTM) access.DFTMErrorBound
//	eq. EA_approx                 DF-EA matrix-vector product                   access.DFEA, access.DFEAMatVecGraph, adjoint.DFEA
//	Prop. error_bound_ea          DF-EA error bound (σ(F − F_EA) as printed)     access.DFEA, mnist.RunExactStudy
//	eq. nll_VJP                   exact trace by d VJPs                         access.VJPTrace
//	app. hutchinson               Hutchinson and Hutch++ traces                 access.Hutchinson, access.HutchPP
//	eq. Adjoint_VJP               F v by one VJP                                access.VJPMatVec, access.VJPMatVecGraph, adjoint.VJP
//	eq. Adjoint_ODE               the adjoint carried along the PF-ODE          pfode.Layout (pfode.Carry)
//	eq. Adjoint_ODE (discrete)    the adjoint through cached DDIM steps         adjoint.Backprop, adjoint.Guide
//	sec:ea adjoint sampling       adjoint-guided DDIM with a Fisher operator    adjoint.Guide (Sample, Gradient)
//	eq. nll_ode                   log q_s(x) by the PF-ODE                      likelihood.LogProb, pfode.LogDensityRate
//	Prop. ot                      PF-ODE map is OT iff its Jacobian is SPD      ot.Judge, pfode.VelocityJacobian
//	eq. eq:ot_b                   the paper's matrix update A ← A + dt AᵀB       ot.PaperRule
//	Algorithm ot                  the numerical OT test                         ot.Test
//	Table tab:trace_toy           Table 2 (DF-TM vs VJP, 2-D)                   toys.Run
//	Table tab:ot                  Table 3 (OT test)                             ot.Run
//	Table 1, Figs 1–2             likelihood on MNIST                           mnist.Run
//	Figs 3–4 (app. extra_adjoint) adjoint guidance, VJP vs DF-EA, on MNIST      mnist.RunAdjoint
//
// Beyond the paper: the centred DF-TM (access.DFTMCentred, models.DFTMCentred),
// the exact-mixture "network" (access.Mixture), the MNIST empirical
// distribution as ground truth (mnist), and the exact-operator study of
// adjoint guidance (mnist.RunExactStudy, toys.RunAdjointGMM).
package dfx
