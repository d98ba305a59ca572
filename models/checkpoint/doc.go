// Package checkpoint is dfx's one file format for networks: a checksummed
// header and variable data decoded strictly (Encode, Decode, Read), the
// provenance every file records (what its networks were trained on), the
// digests that pair a trace network with its ε-network, and the loads that
// check a file's variables against the networks it names (LoadWeights,
// Verify, SaveTrainer and LoadTrainer).
//
// It is a package of its own because the dependency runs one way: a file
// is checked against the graphs that models builds (models.NetworkShapes)
// and a trainer is resumed through models.Trainer.Resume, while models —
// the networks, their parameterisations and the training loop — works on
// stores and never reads or writes a file. So the byte-level rules live in
// one place, imported by the commands, problems and studies that touch
// files and by nothing below them.
//
// Error messages begin "models: …" (the layer, not this package's name):
// the wording the CLI prints for a bad checkpoint, whichever package holds
// the check.
package checkpoint
