package toys

import (
	"fmt"
	"os"

	"github.com/dfx-lab/dfx/dfx/report"
)

// Profile is the notebooks' choice: Quick under the quick profile
// (report.QuickProfile, $DFX_QUICK=1), Full otherwise.
func Profile() Config {
	if report.QuickProfile() {
		return Quick()
	}
	return Full()
}

// ReproduceConfig is the configuration of `dfx reproduce toys`: Full or
// Quick. The full profile loads the committed checkpoints (compiled in, so
// from any working directory) and trains only what is missing;
// DFX_RETRAIN=1 retrains and rewrites toys/checkpoints (run from the
// repository root).
func ReproduceConfig(quick bool) (Config, error) {
	cfg := Full()
	if quick {
		cfg = Quick()
	}
	err := retrainFromEnv(&cfg)
	return cfg, err
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
