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
// the committed checkpoints from toys/checkpoints (relative to the working
// directory, the repository root) and trains only what is missing; set
// DFX_RETRAIN=1 to retrain.
func Reproduce(ctx context.Context, outDir string, quick bool, log io.Writer) error {
	cfg := Full()
	if quick {
		cfg = Quick()
	}
	if os.Getenv("DFX_RETRAIN") == "1" {
		cfg.Retrain = true
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
