package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/internal/input"
	"github.com/dfx-lab/dfx/internal/outfile"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/models/checkpoint"
	"github.com/dfx-lab/dfx/models/onnximport"
)

// importProducer is the Producer of dfx import's checkpoints: the only
// existing files that -out replaces.
const importProducer = "import"

// maxONNXBytes is protobuf's own bound on one message.
const maxONNXBytes = 2 << 30

const importUsage = `usage: dfx import MODEL.onnx -param eps|x0|v|score -schedule vp|ve|subvp|edm [-time t|sigma] [-time-scale S] ` +
	`[-class-input NAME -classes K] -out NET.dfxckpt
Turns an ONNX noise-prediction network (torch.onnx.export of a PyTorch model, with a dynamic batch axis) into a dfx
checkpoint that every study reads (dfx nll --checkpoint, dfx ckpt). The network is called as net(x, time[, class]):
x its first input (NCHW images or flat vectors; dfx's points are the flat C-order rows of that layout), the time its
second, S·t (-time t: diffusers' DDPM models take S = 999) or S·σ (-time sigma), the class the input -class-input
(K classes, label K the null class of classifier-free guidance). Its output is ε, x̂₀, v or the score (-param).
GroupNorm's InstanceNormalization and nearest upsampling are rewritten to ops whose gradients match PyTorch's.`

// importArgs are dfx import's flags as parsed.
type importArgs struct {
	param, time, class, out *string
	scale                   *float64
	classes                 *int
	sched                   func() (schedule.Schedule, error)
}

func importFlags() (*flag.FlagSet, *importArgs) {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	a := &importArgs{}
	a.param = fs.String("param", "", "what the network outputs: eps, x0, v or score (required)")
	a.sched = scheduleFlags(fs, "")
	a.time = fs.String("time", models.TimeT, "what the time input receives: t (S·t) or sigma (S·σ)")
	a.scale = fs.Float64("time-scale", 1, "the scale S of the time input (> 0)")
	a.class = fs.String("class-input", "", "the network's class-label input (class-conditional networks)")
	a.classes = fs.Int("classes", 0, "with -class-input: the number of classes K (label K is the null class)")
	a.out = fs.String("out", "", "checkpoint file to write (.dfxckpt)")
	return fs, a
}

// splitModelArg takes the ONNX file from the front of args (dfx import
// MODEL.onnx -flags…) or leaves args for the flags to end with it.
func splitModelArg(args []string) (model string, rest []string) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return args[0], args[1:]
	}
	return "", args
}

func runImport(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs, a := importFlags()
	path, rest := splitModelArg(args)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, importUsage)
			fs.SetOutput(stderr)
			fs.PrintDefaults()
			return 0
		}
		return fail(stderr, "import", err)
	}
	switch {
	case path == "" && fs.NArg() == 1:
		path = fs.Arg(0)
	case fs.NArg() > 0:
		return fail(stderr, "import", fmt.Errorf("unexpected argument %q (one ONNX file, then flags)", fs.Arg(0)))
	}
	opt, err := importOptions(fs, a, path)
	if err != nil {
		return fail(stderr, "import", err)
	}
	if err := checkOutFile("out", *a.out, checkpoint.ProducedBy(importProducer)); err != nil {
		return failErr(stderr, "import", err)
	}
	if err := checkBackend(); err != nil {
		return failErr(stderr, "import", err)
	}
	raw, err := input.ReadAll(path, maxONNXBytes)
	if err != nil {
		return fail(stderr, "import", err)
	}
	im, err := onnximport.Import(raw, opt)
	if err != nil {
		return fail(stderr, "import", fmt.Errorf("%s: %w", path, err))
	}
	c, err := im.Checkpoint(filepath.Base(path))
	if err != nil {
		return failErr(stderr, "import", err)
	}
	c.Header.Producer = importProducer
	enc, err := c.Encode()
	if err != nil {
		return failErr(stderr, "import", err)
	}
	if err := outfile.WriteAll([]outfile.File{{Path: *a.out, Data: enc, Owned: checkpoint.ProducedBy(importProducer)}}); err != nil {
		return failErr(stderr, "import", err)
	}
	abs, _ := filepath.Abs(*a.out)
	fmt.Fprintf(stdout, "%s\td = %d (layout %v)\t%d parameters\t%d nodes rewritten\tonnx sha256 %s\n",
		abs, im.Dim(), im.Spec.Layout, c.ParamCount(), im.Rewrites, im.SHA256)
	return 0
}

// importOptions checks the flags and returns the import's options.
func importOptions(fs *flag.FlagSet, a *importArgs, path string) (onnximport.Options, error) {
	switch {
	case path == "":
		return onnximport.Options{}, errors.New("want the ONNX file to import (dfx import MODEL.onnx -param … -schedule … -out …)")
	case *a.out == "":
		return onnximport.Options{}, errors.New("-out must name the checkpoint file to write")
	case *a.param == "":
		return onnximport.Options{}, errors.New("-param is required: what the network outputs (eps, x0, v or score)")
	case *a.class != "" && *a.classes < 1:
		return onnximport.Options{}, fmt.Errorf("-class-input %s needs -classes K ≥ 1 (label K is the null class)", *a.class)
	case *a.class == "" && isSet(fs, "classes"):
		return onnximport.Options{}, errors.New("-classes applies with -class-input")
	}
	if p, err := models.ParseParameterisation(*a.param); err != nil || p == models.PredictEDM {
		return onnximport.Options{}, fmt.Errorf("unknown -param %q (want eps, x0, v or score)", *a.param)
	}
	if *a.time != models.TimeT && *a.time != models.TimeSigma {
		return onnximport.Options{}, fmt.Errorf("unknown -time %q (want t or sigma)", *a.time)
	}
	if err := finite("time-scale", *a.scale, 0, false); err != nil {
		return onnximport.Options{}, err
	}
	s, err := a.sched()
	if err != nil {
		return onnximport.Options{}, err
	}
	return onnximport.Options{Param: *a.param, Schedule: s, Time: *a.time, TimeScale: *a.scale, ClassInput: *a.class, NumClasses: *a.classes}, nil
}
