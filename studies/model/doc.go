// Package model is the model study: how good a diffusion network is as a
// density, beside the closed-form baselines it must beat. mnist-model
// gives an ε-network's converged PF-ODE test bpd (with its solver error)
// beside its skip mixture's exact bpd on the same images, and the quality
// of its samples, keeping the likelihood's batches and the samples in a
// resumable work folder (internal/workstore; shards split the likelihood
// over machines); mnist-baselines the exact test bpd of Gaussians and
// Gaussian mixtures fitted to the training images; mnist-ablation the
// network's design at equal training steps; mnist-candidates a
// researcher's own trainings read from their checkpoints or states.
package model
