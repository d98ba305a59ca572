package toys

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/models/checkpoint"
)

func TestEveryPublishedNetworkIsCompiledInAndLoadsStrictly(t *testing.T) {
	cfgs := publishedConfigs()
	n := 0
	for _, cfg := range cfgs {
		sch := mustSchedule(t, cfg)
		for _, seed := range cfg.TrainSeeds {
			eps := ""
			for _, net := range []string{"score", "df-tm", "df-tm-c"} {
				file := checkpointName(cfg, net, seed)
				store, cp, where, err := loadCheckpoint("", file, true, cfg, sch, eps)
				if err != nil {
					t.Errorf("%s: %v", file, err)
					continue
				}
				if net == "score" {
					if eps, err = scoreDigest(store); err != nil {
						t.Fatal(err)
					}
				}
				if !strings.HasPrefix(where, "embedded:") || cp.Curve.Net != net || !models.HasNetwork(store, netScopes[net]) {
					t.Errorf("%s: loaded from %s, net %q", file, where, cp.Curve.Net)
				}
				n++
			}
		}
	}
	if n != 21 {
		t.Errorf("%d published networks, want 21", n)
	}
}

func TestCorruptOrForeignCheckpointsAreRejectedWithClearErrors(t *testing.T) {
	cfg := Published("checkerboard")
	sch := mustSchedule(t, cfg)
	file := checkpointName(cfg, "score", 1)
	raw, err := committedCheckpoints.ReadFile("checkpoints/" + file)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(b []byte) {
		if err := os.WriteFile(filepath.Join(dir, file), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Every flipped bit is caught (the checksum covers the whole file).
	for _, pos := range []int{0, 20, len(raw) / 2, len(raw) - 40, len(raw) - 1} {
		b := append([]byte(nil), raw...)
		b[pos] ^= 0x10
		write(b)
		if _, _, _, err := loadCheckpoint(dir, file, true, cfg, sch, ""); !errors.Is(err, checkpoint.ErrInvalid) {
			t.Errorf("bit flipped at byte %d: %v", pos, err)
		}
	}
	write([]byte("not a checkpoint"))
	if _, _, _, err := loadCheckpoint(dir, file, true, cfg, sch, ""); !errors.Is(err, checkpoint.ErrInvalid) {
		t.Errorf("junk: %v", err)
	}
	// A file of the folder wins over the compiled-in one, and is checked
	// against the configuration.
	write(raw)
	other := cfg
	other.Train.Width++
	if _, _, _, err := loadCheckpoint(dir, file, true, other, sch, ""); err == nil || !strings.Contains(err.Error(), "retrain") {
		t.Errorf("another configuration: %v", err)
	}
	if _, _, _, err := loadCheckpoint(dir, "absent.dfxckpt", false, cfg, sch, ""); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("absent file: %v", err)
	}
}

// TestACheckpointOfAnotherSizeIsRefused: a saved network trained with
// another TrainConfig is an error naming the retraining, not silently used.
func TestACheckpointOfAnotherSizeIsRefused(t *testing.T) {
	cfg := QuickProblem("checkerboard")
	cfg.N, cfg.Checkpoints = 300, t.TempDir()
	cfg.Train = TrainConfig{Width: 8, Depth: 1, EmbedDim: 4, Steps: 30, BatchSize: 32, LearningRate: 3e-3, EMADecay: 0.9, LogEvery: 10}
	data, err := Sample(cfg.Dataset, cfg.N, cfg.DataSeed)
	if err != nil {
		t.Fatal(err)
	}
	sch := mustSchedule(t, cfg)
	if _, err := ObtainNetworks(context.Background(), cfg, sch, data, io.Discard); err != nil {
		t.Fatal(err)
	}
	name := checkpointName(cfg, "score", 1)
	if _, _, _, err := loadCheckpoint(cfg.Checkpoints, name, false, cfg, sch, ""); err != nil {
		t.Fatalf("the checkpoint just saved: %v", err)
	}
	other := cfg
	other.Train.Width = 16
	if _, _, _, err := loadCheckpoint(cfg.Checkpoints, name, false, other, sch, ""); err == nil || !strings.Contains(err.Error(), "retrain") {
		t.Errorf("a checkpoint trained with another width: %v", err)
	}
}
