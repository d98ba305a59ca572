package toys

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/internal/atomicfile"
	"github.com/dfx-lab/dfx/models/checkpoint"
)

func mustSchedule(t *testing.T, cfg ProblemConfig) schedule.Schedule {
	t.Helper()
	s, err := schedule.ByName(cfg.Schedule, schedule.Params{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// publishedConfigs are the configurations whose networks are committed.
func publishedConfigs() []ProblemConfig {
	cfgs := []ProblemConfig{Published("checkerboard")}
	for _, name := range OtherDatasets() {
		cfgs = append(cfgs, Published(name))
	}
	return cfgs
}

// TestRestampCommittedCheckpoints is the documented, one-off command that
// gave the committed toy networks (trained before checkpoints recorded
// their provenance) their provenance without retraining:
//
//	DFX_RESTAMP=1 GOEXPERIMENT=simd go test ./toys -run TestRestampCommittedCheckpoints
//
// It records each configuration's data set and schedule and, for the DF-TM
// networks, the digest of the score network of the same seed; the weights
// stay byte for byte the same (checkpoint.Restamp checks it).
func TestRestampCommittedCheckpoints(t *testing.T) {
	if os.Getenv("DFX_RESTAMP") != "1" {
		t.Skip("rewrites toys/checkpoints: set DFX_RESTAMP=1")
	}
	for _, cfg := range publishedConfigs() {
		sch := mustSchedule(t, cfg)
		for _, seed := range cfg.TrainSeeds {
			eps := ""
			for _, net := range []string{"score", "df-tm", "df-tm-c"} {
				path := filepath.Join("checkpoints", checkpointName(cfg, net, seed))
				raw, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				out, err := checkpoint.Restamp(raw, path, sch, toyProvenance(cfg, eps))
				if err != nil {
					t.Fatal(err)
				}
				if net == "score" {
					c, err := checkpoint.Decode(out, path)
					if err != nil {
						t.Fatal(err)
					}
					store, err := checkpoint.LoadWeights(c)
					if err != nil {
						t.Fatal(err)
					}
					if eps, err = scoreDigest(store); err != nil {
						t.Fatal(err)
					}
				}
				if err := atomicfile.WriteFile(path, out); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// TestMismatchedToyNetworksAreRefused: a DF-TM network with another seed's
// score network, or a network used with another schedule or data set, is
// an error.
func TestMismatchedToyNetworksAreRefused(t *testing.T) {
	cfg := Published("checkerboard")
	sch := mustSchedule(t, cfg)
	digest := func(seed uint64) string {
		store, _, _, err := loadCheckpoint("", checkpointName(cfg, "score", seed), true, cfg, sch, "")
		if err != nil {
			t.Fatal(err)
		}
		d, err := scoreDigest(store)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d1, d2 := digest(1), digest(2)
	for _, net := range []string{"df-tm", "df-tm-c"} {
		file := checkpointName(cfg, net, 1)
		if _, _, _, err := loadCheckpoint("", file, true, cfg, sch, d1); err != nil {
			t.Errorf("%s with its own score network: %v", net, err)
		}
		if _, _, _, err := loadCheckpoint("", file, true, cfg, sch, d2); !errors.Is(err, checkpoint.ErrInvalid) || !strings.Contains(err.Error(), "score network") {
			t.Errorf("%s with seed 2's score network: %v", net, err)
		}
	}
	file := checkpointName(cfg, "score", 1)
	if _, _, _, err := loadCheckpoint("", file, true, cfg, schedule.DefaultVP(), ""); !errors.Is(err, checkpoint.ErrInvalid) || !strings.Contains(err.Error(), "schedule") {
		t.Errorf("a VE network on the VP schedule: %v", err)
	}
	other := cfg
	other.DataSeed++
	if _, _, _, err := loadCheckpoint("", file, true, other, sch, ""); !errors.Is(err, checkpoint.ErrInvalid) || !strings.Contains(err.Error(), "trained on") {
		t.Errorf("a network of another data seed: %v", err)
	}
}
