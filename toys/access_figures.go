package toys

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"time"

	"github.com/dfx-lab/dfx/dfx/plotx"
	"github.com/dfx-lab/dfx/internal/atomicfile"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// AccessPlane is the 2-D profile of the access comparison: the estimators'
// error versus t on an 8-point mixture in the plane, where every method can
// be checked at a glance.
func AccessPlane() AccessConfig {
	return AccessConfig{Schedule: "vp", Dim: 2, Points: 8, Times: []float64{0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9},
		Queries: 64, Steps: 3000, Width: 128, Depth: 3, HutchK: 4, HutchPPM: 6, EMA: true, Seed: 1}
}

// AccessPlaneQuick is AccessPlane with short training, for notebooks in CI.
func AccessPlaneQuick() AccessConfig {
	c := AccessPlane()
	c.Times = []float64{0.1, 0.3, 0.5, 0.7, 0.9}
	c.Queries, c.Steps, c.Width, c.Depth, c.EMA = 16, 400, 64, 2, false
	return c
}

// ErrorPlots draws the mean relative error of each method versus t, one
// panel for traces and one for matrix-vector products (log scale; the exact
// closed form, whose error is 0, is left out).
func (r *AccessResult) ErrorPlots() ([]*plot.Plot, error) {
	var out []*plot.Plot
	for _, kind := range []string{"trace", "matvec"} {
		byMethod := map[string]*plotx.Series{}
		for _, w := range r.Rows {
			if w.Kind != kind || w.Method == "exact" {
				continue
			}
			s := byMethod[w.Method]
			if s == nil {
				s = &plotx.Series{Name: w.Method, Points: true}
				byMethod[w.Method] = s
			}
			s.X = append(s.X, w.T)
			s.Y = append(s.Y, w.RelErr)
		}
		var names []string
		for n := range byMethod {
			names = append(names, n)
		}
		sort.Strings(names)
		var series []plotx.Series
		for _, n := range names {
			series = append(series, *byMethod[n])
		}
		title := fmt.Sprintf("%s: relative error vs exact (d=%d, %s)", kind, r.Config.Dim, r.Config.Schedule)
		p, err := plotx.LogLines(title, "t", "mean relative error", false, true, series...)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// ErrorPNG is ErrorPlots side by side, for notebooks.
func (r *AccessResult) ErrorPNG() ([]byte, error) {
	ps, err := r.ErrorPlots()
	if err != nil {
		return nil, err
	}
	return plotx.TilesBytes(ps, len(ps), 4.5*vg.Inch, 3.5*vg.Inch, "png")
}

// writeAll writes <name>.md, <name>.csv and <name>_errors.png into dir.
func (r *AccessResult) writeAll(dir, name string) error {
	if err := atomicfile.WriteFile(filepath.Join(dir, name+".md"), []byte(r.Markdown())); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(dir, name+".csv"), []byte(r.CSV())); err != nil {
		return err
	}
	png, err := r.ErrorPNG()
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(filepath.Join(dir, name+"_errors.png"), png)
}

// ReproduceAccess runs the access comparison in d = 64 (AccessFull or
// AccessQuick) and in the plane (AccessPlane or AccessPlaneQuick) and writes
// tables and error-versus-t figures into outDir; it is what `dfx reproduce
// access` calls.
func ReproduceAccess(ctx context.Context, outDir string, quick bool, log io.Writer) error {
	runs := []struct {
		name string
		cfg  AccessConfig
	}{{"access", AccessFull()}, {"plane", AccessPlane()}}
	if quick {
		runs[0].cfg, runs[1].cfg = AccessQuick(), AccessPlaneQuick()
	}
	for _, run := range runs {
		start := time.Now()
		r, err := RunAccess(ctx, run.cfg)
		if err != nil {
			return err
		}
		if err := r.writeAll(outDir, run.name); err != nil {
			return err
		}
		var buf bytes.Buffer
		for _, w := range r.Rows {
			fmt.Fprintf(&buf, "  d=%-3d t=%-4g %-6s %-13s rel. error %-9.3g %v/query\n", run.cfg.Dim, w.T, w.Kind, w.Method, w.RelErr, w.PerQuery.Round(time.Microsecond))
		}
		fmt.Fprintf(&buf, "  (%s: %.0fs)\n", run.name, time.Since(start).Seconds())
		if _, err := log.Write(buf.Bytes()); err != nil {
			return err
		}
	}
	return nil
}
