package toys

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Reproduce runs the Quick or Full profile and writes its table and figures
// into outDir; it is what `dfx reproduce toys` calls. The full profile loads
// the committed checkpoints (compiled in, so from any working directory)
// and trains only what is missing; DFX_RETRAIN=1 retrains and rewrites
// toys/checkpoints (run from the repository root).
func Reproduce(ctx context.Context, outDir string, quick bool, log io.Writer) error {
	cfg := Full()
	if quick {
		cfg = Quick()
	}
	if err := retrainFromEnv(&cfg); err != nil {
		return err
	}
	res, err := Run(ctx, cfg, log)
	if err != nil {
		return err
	}
	if err := res.Write(outDir); err != nil {
		return err
	}
	if err := DatasetsFigure(filepath.Join(outDir, "datasets.png"), cfg.N, cfg.DataSeed); err != nil {
		return err
	}
	if log != nil {
		fmt.Fprintf(log, "toys: wrote %s/table2.md and figures in %.1fs\n", outDir, res.Elapsed.Seconds())
	}
	return nil
}

// retrainFromEnv applies DFX_RETRAIN=1: retrain, and write the new
// checkpoints into toys/checkpoints under the working directory.
func retrainFromEnv(cfg *Config) error {
	switch os.Getenv("DFX_RETRAIN") {
	case "", "0":
		return nil
	case "1":
	default:
		return fmt.Errorf("toys: DFX_RETRAIN=%q, want 1 or unset", os.Getenv("DFX_RETRAIN"))
	}
	cfg.Retrain = true
	if cfg.Embedded {
		const dir = "toys/checkpoints"
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return fmt.Errorf("toys: DFX_RETRAIN=1 rewrites %s: run from the repository root", dir)
		}
		cfg.Checkpoints = dir
	}
	return nil
}
