// Package dfx indexes the paper "Efficiently Access Diffusion Fisher:
// Within the Outer Product Span Space" (ICML 2025) against the code that
// implements it. The library lives in the sub-packages (schedule, mixture,
// score, access, pfode, likelihood, adjoint, report, notebook, plotx);
// models holds the networks and the top-level packages toys, ot and mnist
// the experiments.
//
// The data flow: schedule.Coefficients (one time) and data → a
// score.Model (score.Exact for a mixture, access.NetModel for a network:
// ε̂ / x̂₀ / score, optionally the Fisher trace) → the Fisher access
// contracts score.TraceEstimator and score.FisherOperator (dfx/access) →
// dfx/pfode (one integrator, one DDIM step pfode.DDIMStep) → likelihood,
// adjoint → the experiments → dfx/report.
//
// Every label of the paper that the code implements, with the number the
// PDF prints, and where (the test beside this file checks that every cited
// identifier exists, that every label below is cited, and that every file
// named for a table or figure is committed):
//
//	printed      label                      what                                          code
//	Eq. 1        diffusion_kernel           x_t = α(t) x₀ + σ(t) ε                        schedule.Schedule, schedule.At
//	Eq. 2        diffusion_sde              the forward SDE: f(t), g²(t)                  schedule.Coefficients
//	Eq. 3        diffusion_sde_rev          the reverse SDE                               none: every sampler integrates the
//	    PF-ODE (eq. PFODE) or takes DDIM steps
//	Eq. 4        dpm_objective              denoising score matching                      models.NewTrainer (models.DSM)
//	Eq. 5        PFODE                      dx/dt = f x − ½ g² ∇log q_t                   pfode.Velocity, pfode.VelocityFromEps, pfode.New
//	Eq. 6        dm_neural_ode              the PF-ODE with the learned score s_θ = −ε_θ/σ score.ScoreFromEps, access.NetModel
//	Eq. 7        fisher_def                 F = −∇²log q_t                                mixture.Mixture, score.Exact
//	Eq. 8        (no label)                 F ≈ (1/σ) ∂ε_θ/∂x, the network's Jacobian      access.VJPMatVecGraph, access.VJPTrace
//	Eq. 9        VJP                        F v by a vector-Jacobian product              access.VJPMatVecGraph
//	Sec. 3       sec:analytical             the Fisher in the outer-product span          mixture.Mixture, score.Exact
//	Eq. 10–11    dirac_initial_dist, information_dirac  the Dirac mixture and its F   mixture.NewDirac, access.Mixture
//	Prop. 1      prop:analytic_dirac        exact F of a Dirac mixture                    mixture.NewDirac, mixture.Dirac, access.Mixture
//	Prop. 2      prop:optimal_y             ȳ = E[x₀ | x_t], the denoiser (Tweedie)        score.DenoiserFromEps, access.EpsFromDenoiser, models.Denoiser
//	Eq. 12–13    general_initial_dist, information_general  Gaussian mixture, its F   mixture.NewGaussian
//	Prop. 3      prop:analytic_general      exact F of a Gaussian mixture                 mixture.NewGaussian, mixture.Gaussian
//	Prop. 4      prop:optimal_y_general     ȳ for a general q₀                            score.Exact
//	Sec. 4       sec:tm                     DF trace matching                             access.DFTM, likelihood.LogProb
//	Eq. 14       nll_ode                    log q_s(x) by the PF-ODE                      likelihood.LogProb, pfode.LogDensityRate
//	Eq. 15       nll_VJP                    exact trace by d VJPs                         access.VJPTrace
//	Prop. 5      prop:trace_matching        tr F from t* and ȳ                            access.DFTM, access.DFTMTraceOf
//	Eq. 16       trace_matching             tr F = d/σ² − (α²/σ⁴)(d t* − ‖ȳ‖²)            access.DFTMTraceOf
//	Alg. 1       algo:tnet                  training the DF-TM network                    models.NewTrainer (models.DFTM)
//	Prop. 6      prop:optimal_t             t* = E[‖x₀‖² | x_t]/d, DF-TM's target          models.TraceNet (models.DFTM)
//	Eq. 17       trace_appro                DF-TM trace                                   access.DFTM, access.DFTMTraceGraph
//	Prop. 7      prop:error_bound_trace     DF-TM error bound (corrected: see access.DFTM) access.DFTMErrorBound
//	Eq. 18       Adjoint_ODE                the adjoint along the PF-ODE                  pfode.Layout (pfode.Adjoint)
//	Eq. 18 (discrete) Adjoint_ODE           the adjoint through cached DDIM steps         adjoint.Backprop, pfode.DDIMAdjointStep
//	Eq. 19       Adjoint_VJP                F v by one VJP                                access.VJPMatVec, access.VJPMatVecGraph
//	Eq. 20       EA_approx                  DF-EA matrix-vector product                   access.DFEA, access.DFEAApply,
//	    access.DFEAMatVecGraph, access.DFEAMatrix
//	Prop. 8      prop:error_bound_ea        DF-EA error bound (σ(F − F_EA) as printed)     access.DFEAErrorBound, studies/adjoint.ExactStudy
//	Sec. 5       sec:ea                     adjoint-guided DDIM with a Fisher operator    adjoint.Guide, pfode.DDIMStep
//	Sec. 6       sec:ot                     numerical OT verification of the PF-ODE map   ot.Run, ot.Table3
//	Cor. 1       prop:ot                    PF-ODE map is OT iff its Jacobian is SPD      ot.Judge, pfode.VelocityJacobian
//	Eq. 21       (no label)                 the PF-ODE map T_{s,t}: x_s ↦ x_t             pfode.Solve, ot.Integration
//	Eq. 22       eq:ot_b                    the paper's matrix update A ← A + dt AᵀB       ot.PaperRule
//	Alg. 2       algo:ot                    the numerical OT test                         ot.Test
//	Alg. 3       algo:to_detail             the detailed OT test (published protocol)     ot.PublishedRule, ot.Run
//	App. B.1     app:extra_nll              NLL evaluation details                        likelihood.BitsPerDim, studies/likelihood.Run
//	App. B.2     app:extra_adjoint          adjoint guidance details                      adjoint.Config, studies/adjoint.RunGuidance
//	App. B.3     app:extra_ot               the OT experiments' protocol                  ot.PublishedRule, ot.Table3
//	App. B.4     app:exp_models             the paper's pretrained models (Stable Diffusion, reward models)  none: the MNIST
//	    networks are trained here (mnist.TrainNetwork, mnist.LoadNetworks)
//	App. C       app:discussion             discussions                                   (the rows below)
//	App. C.1     app:singularity            F is singular at t = 0                        likelihood.Config (T0 > 0), studies/likelihood (the paper's t₁)
//	App. C.2     (no label)                 BPD = −log p₀/(d log 2)                       likelihood.BitsPerDim
//	App. C.4     app:covariance             F and the posterior covariance                mixture.Gaussian, access.DFTMCentred
//	App. C.5     app:hutchinson             Hutchinson and Hutch++ traces                 access.Hutchinson, access.HutchPP
//
// The proofs of the appendix (App. A) and the code that computes what each
// labelled step states; the unlabelled equations of the proofs (Eqs.
// 24–30, 32–40, 42 onwards) are steps of derivations with no code of
// their own:
//
//	printed      label                      what                                          code
//	Eq. 23       lemma:v                    Lemma 1: ∂vᵢ/∂x = −(x − α yᵢ) vᵢ/σ²           mixture.Dirac (the score −(x − α ȳ)/σ²)
//	Lemma 2      lemma:chain                ∂(Σ wᵢ yᵢ)/∂x = (α/σ²) Cov[y | x]             mixture.Dirac (its Fisher, mixture.Full), access.Mixture
//	Eq. 31       lemma:v_general            Lemma 3: Lemma 1 for a general q₀             mixture.Gaussian
//	Lemma 4      lemma:chain_general        Lemma 2 for a general q₀                      mixture.Gaussian
//	Eq. 41       optimal_p_eq1              DF-TM's objective E|t_θ − ‖x₀‖²/d|²           models.NewTrainer (models.DFTM)
//	App. A.9     appendix:preliminary_ot    the Monge and Kantorovich problems            ot.Judge
//	App. A.10    appendix:proof_ot          Cor. 1's proof: ∂T/∂x symmetric and PD        ot.Judge, pfode.VelocityJacobian
//	Thm. 1       theorem:convex             the gradient of a convex potential is OT      ot.Judge
//	Thm. 2       theorem:brenier            Brenier's theorem                             ot.Judge
//	Thm. 3       theorem:poincare           a symmetric Jacobian has a potential          ot.Asymmetry
//	Thm. 4       theorem:hessian_convex     convex iff the Hessian is PSD                 ot.MinEigSym
//
// Every table and figure of the paper, the function that computes its data,
// and the command and files that regenerate it (figures/ holds the
// committed outputs; -quick gives a small version in minutes):
//
//	printed      label                what                                    code
//	Table 1      tab:my_label         cost and error of every access method   studies/likelihood.Run
//	             dfx reproduce mnist → figures/mnist/table1.md, figures/mnist/truth.md
//	Table 2      tab:trace_toy        DF-TM vs VJP traces and NLL, 2-D        studies/access.Run           dfx reproduce toys → figures/toys/table2.md
//	Table 3      tab:ot               the OT test of four schedules           ot.Run, ot.Table3            dfx reproduce ot → figures/ot/table3.md
//	Fig. 1       fig:xx               Fig. 1a and Fig. 1b together            studies/likelihood.Run
//	             dfx reproduce mnist → figures/mnist/fig1a_loss.png, figures/mnist/fig1b_nll_vs_logp.png
//	Fig. 1a      fig:train_loss       DF-TM training loss                     studies/likelihood.Run
//	             dfx reproduce mnist → figures/mnist/fig1a_loss.png
//	Fig. 1b      fig:tradeoff         NLL against guidance score              studies/likelihood.Run
//	             dfx reproduce mnist → figures/mnist/fig1b_nll_vs_logp.png, figures/mnist/guidance.md
//	Fig. 2       fig:nll_compare      samples ranked by NLL                   studies/likelihood.Run
//	             dfx reproduce mnist → figures/mnist/fig2_ranked.png, figures/mnist/fig2.md
//	Fig. 3       fig:adjoint_score    adjoint guidance, VJP vs DF-EA          studies/adjoint.RunGuidance
//	             dfx reproduce adjoint → figures/adjoint/fig3_reward_vs_steps.png, figures/adjoint/fig3_rewards.md
//	Fig. 4       fig:aes_shown        guided samples, VJP vs DF-EA            studies/adjoint.RunGuidance
//	             dfx reproduce adjoint → figures/adjoint/fig4_samples.png
//
// Beyond the paper: the centred DF-TM (access.DFTMCentred, models.DFTMCentred),
// the exact-mixture "network" (access.Mixture), the MNIST empirical
// distribution as ground truth (studies/likelihood.Run), the exact-operator study of
// adjoint guidance (studies/adjoint: ExactStudy in RunGuidance, RunGMM), the access
// comparison against the exact Fisher (studies/access.RunAccess: dfx reproduce access
// → figures/access/access.md) and the exact fields of a 2-D mixture
// (studies/access.RunFields: dfx reproduce fields → figures/fields/summary.md).
//
// The image-scale model: Gaussian mixtures fitted to MNIST as
// exact baselines (mixture.Fit, model.RunBaselines in studies/model: dfx reproduce
// mnist-baselines → figures/mnist-baselines/baselines.md) and as a
// network whose Fisher is known exactly (studies/access.RunExactModel: dfx reproduce
// mnist-exact-model); the ε-network with a mixture skip (models.MixtureEps,
// models.PatchNet), its DF-TM with the skip (models.MixtureSecondMoment),
// the control-variate trace (access.ControlVariate), the ELBO validation
// (mnist.ValidationELBO), the design ablation (model.RunAblation: dfx
// reproduce mnist-ablation → figures/mnist-ablation/ablation.md) and one
// network's test bpd and samples (model.RunModelEval: dfx reproduce
// mnist-model).
//
// Density guidance (beyond the paper): d/dt log q_t(x_t) =
// −f d − ½ g² tr F along the PF-ODE (eq. nll_ode) is what steering a
// sample's log-density needs, so any trace estimator — exact, VJP,
// Hutchinson, DF-TM — powers it: pfode.DensityGuide (PFODE.Guide, targets
// pfode.Offset and pfode.Level, quantiles pfode.QuantilesOf with
// mixture.Gaussian.DiffusedLogProbs); the ground truth on analytic Gaussian
// mixtures (studies/density RunGMM on toys.GMM: dfx reproduce density → figures/density/density.md),
// MNIST (dfx reproduce mnist-density; density.Sample, density.ReferenceLevels,
// density.ExploreDensity) and `dfx sample -density`.
//
// Running them: every study takes a problem.Problem (data, exact
// reference, baseline, networks: toys.Problem and toys.GMM for the toy
// problems, mnist.Problem for the image sets) and registers its experiments
// with report.Register(report.Spec[C]) — Quick and Full configurations, its
// own knobs bound to flags, a Check made before any work and one
// Run(ctx, C, report.Env) (Env: log, networks folder, work folder) — in one
// registry (report.Lookup, report.Experiments) that `dfx reproduce`,
// notebook.Run and the tests use. Every network trains through
// one loop, models.Trainer.Run with a models.Loop (loss curve, hooks for
// validation, saves and logs). Only the entry points (cmd/dfx,
// dfx/notebook) read the environment; the test beside this file fails when
// a library reads a variable.
package dfx
