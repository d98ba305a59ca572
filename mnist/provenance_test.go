package mnist

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/internal/atomicfile"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/models/checkpoint"
)

// TestRestampCommittedCheckpoints is the documented, one-off command that
// gave the committed networks (trained before checkpoints recorded their
// provenance) their provenance without retraining:
//
//	DFX_RESTAMP=1 GOEXPERIMENT=simd go test ./mnist -run TestRestampCommittedCheckpoints
//
// run from the repository root. It records the training set (the IDX
// training images, hashed), its scaling, no dequantisation, the VP schedule
// and, for dftm and dftm-c, the digest of the committed eps; it checks that
// every variable is byte for byte the same before it writes (atomically).
func TestRestampCommittedCheckpoints(t *testing.T) {
	if os.Getenv("DFX_RESTAMP") != "1" {
		t.Skip("rewrites mnist/checkpoints: set DFX_RESTAMP=1")
	}
	eps, _, err := loadCheckpointRaw(filepath.Join("checkpoints", "eps.dfxckpt"))
	if err != nil {
		t.Fatal(err)
	}
	digest, err := checkpoint.Digest(eps, models.ScoreScope)
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range Specs() {
		path := filepath.Join("checkpoints", spec.Name+".dfxckpt")
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		d := ""
		if usesEps(spec) {
			d = digest
		}
		p, err := trainProvenance(spec, d)
		if err != nil {
			t.Fatal(err)
		}
		var s schedule.Schedule
		if spec.Objective != models.Classify {
			s = Schedule()
		}
		out, err := checkpoint.Restamp(raw, path, s, p)
		if err != nil {
			t.Fatal(err)
		}
		if err := atomicfile.WriteFile(path, out); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: stamped (%d → %d bytes)", path, len(raw), len(out))
	}
}

func loadCheckpointRaw(path string) (*checkpoint.Checkpoint, []byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	c, err := checkpoint.Decode(raw, path)
	return c, raw, err
}

// TestCommittedNetworksCarryTheirProvenance: every committed network names
// the VP schedule, the training set, its scaling and dequantisation (its
// spec's: the diffusion networks dequantised, the classifier not), and
// t_θ/ν_θ the committed ε-network.
func TestCommittedNetworksCarryTheirProvenance(t *testing.T) {
	ckpts, where := map[string]*checkpoint.Checkpoint{}, map[string]string{}
	for _, spec := range Specs() {
		c, w, err := loadCheckpoint("", spec.Name)
		if err != nil {
			t.Fatal(err)
		}
		ckpts[spec.Name], where[spec.Name] = c, w
		p := c.Header.Provenance
		scaling, dequant := TrainScaling, TrainDequantize
		if dequantizes(spec) {
			scaling, dequant = DequantScaling, DequantDequantize
		}
		if p.Scaling != scaling || p.Dequantize != dequant || !strings.HasPrefix(p.Data, "idx train: 60000 images 28×28, pixels sha256:") {
			t.Errorf("%s: provenance %+v", spec.Name, *p)
		}
		if (p.EpsNetwork != "") != usesEps(spec) {
			t.Errorf("%s: ε-network %q", spec.Name, p.EpsNetwork)
		}
	}
	if err := checkPairs(ckpts, where); err != nil {
		t.Fatal(err)
	}
	if testing.Short() {
		return
	}
	want, err := trainProvenance(NetSpec{}, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := ckpts["eps"].Header.Provenance.Data; got != want.Data {
		t.Errorf("the committed ε-network was trained on %q, the training set here is %q", got, want.Data)
	}
}

// TestMismatchedNetworksAreRefused: a t_θ or ν_θ stamped for another
// ε-network, or an ε-network of another schedule, in a -nets folder is an
// error, not a silent wrong number.
func TestMismatchedNetworksAreRefused(t *testing.T) {
	backend, err := models.NewBackend()
	if err != nil {
		t.Fatal(err)
	}
	// A -nets folder must hold all four networks (no fallback to the
	// committed ones): copy them, then replace the one under test.
	restamp := func(name string, s schedule.Schedule, edit func(p *checkpoint.Provenance)) string {
		dir := t.TempDir()
		for _, n := range []string{"eps", "dftm", "dftm-c", "classifier"} {
			raw, err := committed.ReadFile("checkpoints/" + n + ".dfxckpt")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, n+".dfxckpt"), raw, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		raw, err := committed.ReadFile("checkpoints/" + name + ".dfxckpt")
		if err != nil {
			t.Fatal(err)
		}
		c, err := checkpoint.Decode(raw, name)
		if err != nil {
			t.Fatal(err)
		}
		p := *c.Header.Provenance
		edit(&p)
		out, err := checkpoint.Restamp(raw, name, s, p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".dfxckpt"), out, 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	other := strings.Repeat("ab", 32)
	for _, name := range []string{"dftm", "dftm-c"} {
		dir := restamp(name, Schedule(), func(p *checkpoint.Provenance) { p.EpsNetwork = other })
		if _, err := LoadNetworks(backend, dir); !errors.Is(err, checkpoint.ErrInvalid) || !strings.Contains(err.Error(), "ε-network") {
			t.Errorf("%s made for another ε-network: %v", name, err)
		}
	}
	dir := restamp("eps", schedule.VP{BetaMin: 0.1, BetaMax: 10, TMin: 1e-5, TMax: 1}, func(*checkpoint.Provenance) {})
	if _, err := LoadNetworks(backend, dir); !errors.Is(err, checkpoint.ErrInvalid) || !strings.Contains(err.Error(), "schedule") {
		t.Errorf("an ε-network of another schedule: %v", err)
	}
	dir = restamp("classifier", nil, func(p *checkpoint.Provenance) { p.Data = "idx train: 60000 other images" })
	if _, err := LoadNetworks(backend, dir); !errors.Is(err, checkpoint.ErrInvalid) || !strings.Contains(err.Error(), "data") {
		t.Errorf("a classifier trained on other data: %v", err)
	}
}
