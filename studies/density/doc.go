// Package density is the density-guidance study: PF-ODE samples whose
// log-density follows a target (dfx/pfode DensityGuide), steered and
// tracked with a trace estimator of a network, or exactly with a Gaussian
// mixture, the achieved log-density measured independently.
//
// Along the PF-ODE, d/dt log q_t(x_t) = −f d − ½ g² tr F; moving a sample
// along u = v + λ s/‖s‖² changes that rate by λ. A target is an offset of
// P nats per unit time (λ = −P) or a quantile level of log q_t under q_t
// (λ = level′ + gain·(ℓ − level) − r, r = −f d − ½ g² tr F), its levels
// from exact draws of a Gaussian mixture (ExactLevels) or from an unguided
// batch whose ℓ is carried from the prior with a trace (ReferenceLevels).
//
// The study runs on a problem.Problem:
//   - "density" (RunGMM, GMMConfig): the analytic mixtures toys.NewGMM in
//     several dimensions, whose Exact is the mixture; networks are trained
//     on its draws, and every row is measured by the exact log q;
//   - "mnist-density" (Config, MNISTQuick/MNISTFull): an image problem
//     with its networks (Problem.Networks) and a Gaussian mixture fitted to
//     its training images (Problem.Baseline); the networks' rows are
//     measured by the PF-ODE likelihood, and the finished rows are kept in
//     a work folder (internal/workstore) that runs resume and shards share.
//
// Both build their trace estimators in one function, TraceModel, and guide
// through Sample; figures/density/NOTES.md and figures/mnist-density/NOTES.md
// say how to read their tables.
package density
