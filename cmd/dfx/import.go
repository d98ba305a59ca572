package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/dfx-lab/dfx/internal/outfile"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/models/checkpoint"
	"github.com/dfx-lab/dfx/models/onnximport"
)

// importProducer is the Producer of dfx import's checkpoints: the only
// existing files that -out replaces.
const importProducer = "import"

const importUsage = `usage: dfx import MODEL.onnx -param eps|x0|v|score -schedule vp|ve|subvp|edm [-time t|sigma] [-time-scale S] ` +
	`[-class-input NAME -classes K] -out NET.dfxckpt
Turns an ONNX noise-prediction network (torch.onnx.export, with a dynamic batch axis) into a dfx checkpoint that dfx nll
--checkpoint (every trace), dfx sample -checkpoint and dfx ckpt read. The network is called as net(x, time[, class]):
x its first input (NCHW images or flat vectors; dfx's points are the flat C-order rows of that layout), the time its
second, S·t (-time t; diffusers' DDPM models take S = 999) or S·σ (-time sigma), the class the input -class-input (K
classes, label K the null class). Its output is ε, x̂₀, v or the score (-param). See docs/checkpoints.md.`

func runImport(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	param := fs.String("param", "", "what the network outputs: eps, x0, v or score (required)")
	sched := scheduleFlags(fs, "")
	timeIn := fs.String("time", models.TimeT, "what the time input receives: t (S·t) or sigma (S·σ)")
	scale := fs.Float64("time-scale", 1, "the scale S of the time input (> 0)")
	class := fs.String("class-input", "", "the network's class-label input (class-conditional networks)")
	classes := fs.Int("classes", 0, "with -class-input: the number of classes K (label K is the null class)")
	out := fs.String("out", "", "checkpoint file to write (.dfxckpt)")
	var path string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") { // dfx import MODEL.onnx -flags…, or the file last
		path, args = args[0], args[1:]
	} else if n := len(args); n > 0 && !strings.HasPrefix(args[n-1], "-") && (n < 2 || fs.Lookup(strings.TrimLeft(args[n-2], "-")) == nil) {
		path, args = args[n-1], args[:n-1]
	}
	if code, ok := parseFlags(fs, args, stderr, "import", importUsage); !ok {
		return code
	}
	s, err := sched()
	switch {
	case err != nil:
	case path == "":
		err = errors.New("want the ONNX file to import (dfx import MODEL.onnx -param … -schedule … -out …)")
	case *out == "":
		err = errors.New("-out must name the checkpoint file to write")
	case *param == "":
		err = errors.New("-param is required: what the network outputs (eps, x0, v or score)")
	default:
		err = checkOutFile("out", *out, checkpoint.ProducedBy(importProducer))
	}
	if err != nil {
		return failErr(stderr, "import", badInput(err))
	}
	opt := onnximport.Options{Param: *param, Schedule: s, Time: *timeIn, TimeScale: *scale, ClassInput: *class, NumClasses: *classes}
	im, err := onnximport.ReadFile(path, opt)
	if err != nil {
		return failErr(stderr, "import", err)
	}
	raw, err := im.File(filepath.Base(path), importProducer)
	if err != nil {
		return failErr(stderr, "import", err)
	}
	if err := outfile.WriteAll([]outfile.File{{Path: *out, Data: raw, Owned: checkpoint.ProducedBy(importProducer)}}); err != nil {
		return failErr(stderr, "import", err)
	}
	abs, _ := filepath.Abs(*out)
	fmt.Fprintf(stdout, "%s\td = %d (layout %v)\t%d nodes rewritten\tonnx sha256 %s\n", abs, im.Dim(), im.Spec.Layout, im.Rewrites, im.SHA256)
	return 0
}
