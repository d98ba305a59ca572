package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/models/checkpoint"
)

type ckptVariable struct {
	Path      string `json:"path"`
	Shape     []int  `json:"shape"`
	DType     string `json:"dtype"`
	Params    int64  `json:"params"`
	Trainable bool   `json:"trainable"`
}

type ckptReport struct {
	File       string                 `json:"file"`
	Kind       string                 `json:"kind"`
	Objective  string                 `json:"objective,omitempty"`
	Networks   []string               `json:"networks"`
	Dim        int                    `json:"dim"`
	Step       int64                  `json:"step"`
	Params     int64                  `json:"trainable_params"`
	Hyper      map[string]string      `json:"hyperparameters"`
	Config     json.RawMessage        `json:"config,omitempty"`
	Variables  []ckptVariable         `json:"variables"`
	Verified   bool                   `json:"verified"`
	Checksum   string                 `json:"checksum"`
	FormatNote string                 `json:"format"`
	Provenance *checkpoint.Provenance `json:"provenance"`
	// Digests identify each network by its function (checkpoint.NetworkDigest):
	// what a t_θ's or ν_θ's provenance names as its ε-network.
	Digests map[string]string `json:"network_digests"`
}

// runCkpt verifies a checkpoint (checksum, bounds, strict variable set,
// finite values) and lists what it holds.
func runCkpt(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dfx ckpt", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "usage: dfx ckpt [--json] FILE   verify a dfx checkpoint and list its variables and configuration; exit 2 on any defect")
			return 0
		}
		return fail(stderr, "ckpt", err)
	}
	if fs.NArg() != 1 {
		return fail(stderr, "ckpt", fmt.Errorf("want one checkpoint file, got %d arguments", fs.NArg()))
	}
	if err := checkBackend(); err != nil { // Verify builds the networks' shapes with it
		return fail(stderr, "ckpt", err)
	}
	path := fs.Arg(0)
	c, err := checkpoint.Read(path)
	if err != nil {
		return fail(stderr, "ckpt", err)
	}
	if err := checkpoint.Verify(c); err != nil {
		return fail(stderr, "ckpt", fmt.Errorf("%s: %w", path, err))
	}
	h := c.Header
	rep := ckptReport{File: path, Kind: h.Kind, Objective: h.Objective, Networks: h.Networks, Dim: h.Dim, Step: h.Step,
		Params: c.ParamCount(), Hyper: h.Params, Config: h.Config, Verified: true, Checksum: "sha256 ok",
		FormatNote: fmt.Sprintf("DFXCKPT v%d", c.Version()), Provenance: h.Provenance, Digests: map[string]string{}}
	for _, n := range h.Networks {
		if d, err := checkpoint.Digest(c, n); err == nil {
			rep.Digests[n] = d
		}
	}
	for i, v := range h.Variables {
		rep.Variables = append(rep.Variables, ckptVariable{v.Path, v.Dims, v.DType, int64(c.Values[i].Shape().Size()), v.Trainable})
	}
	var out bytes.Buffer
	if *asJSON {
		enc := json.NewEncoder(&out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return fail(stderr, "ckpt", err)
		}
	} else {
		writeCkptText(&out, rep, h)
	}
	if _, err := stdout.Write(out.Bytes()); err != nil {
		return fail(stderr, "ckpt", err)
	}
	return 0
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// writeCkptText writes the ckpt report for people: header, provenance,
// hyperparameters, configuration and one line per variable.
func writeCkptText(out *bytes.Buffer, rep ckptReport, h checkpoint.Header) {
	fmt.Fprintf(out, "%s: verified (%s, %s)\n", rep.File, rep.FormatNote, rep.Checksum)
	fmt.Fprintf(out, "kind %s", h.Kind)
	if h.Objective != "" {
		fmt.Fprintf(out, ", objective %s", h.Objective)
	}
	fmt.Fprintf(out, ", networks %s, data dim %d, step %d, %d trainable parameters\n", strings.Join(h.Networks, " "), h.Dim, h.Step, rep.Params)
	p := h.Provenance
	fmt.Fprintln(out, "provenance:")
	fmt.Fprintf(out, "  %-22s %v\n", "schedule", p.Schedule)
	fmt.Fprintf(out, "  %-22s %s\n", "parameterisation", orNone(p.Param))
	fmt.Fprintf(out, "  %-22s %s\n", "data", p.Data)
	fmt.Fprintf(out, "  %-22s %s\n", "scaling", p.Scaling)
	fmt.Fprintf(out, "  %-22s %s\n", "dequantisation", p.Dequantize)
	if p.EpsNetwork != "" {
		fmt.Fprintf(out, "  %-22s %s\n", "made for ε-network", p.EpsNetwork)
	}
	if p.ONNX != "" {
		fmt.Fprintf(out, "  %-22s %s\n", "imported ONNX sha256", p.ONNX)
	}
	for _, n := range h.Networks {
		fmt.Fprintf(out, "  %-22s %s\n", "digest of "+n, rep.Digests[n])
	}
	fmt.Fprintln(out, "hyperparameters:")
	for _, k := range slices.Sorted(maps.Keys(h.Params)) {
		v := h.Params[k]
		if path.Base(k) == models.ParamONNX { // the graph itself: --json for all of it
			if spec, err := models.DecodeONNXSpec(strings.TrimPrefix(v, "string:")); err == nil {
				v = spec.String()
			}
		}
		fmt.Fprintf(out, "  %-22s %s\n", k, v)
	}
	if len(h.Config) > 0 {
		cfg := string(h.Config)
		if len(cfg) > 400 {
			cfg = cfg[:400] + "… (--json for all)"
		}
		fmt.Fprintf(out, "configuration: %s\n", cfg)
	}
	fmt.Fprintf(out, "%-56s %-14s %-8s %10s %s\n", "variable", "shape", "dtype", "params", "trainable")
	for _, v := range rep.Variables {
		fmt.Fprintf(out, "%-56s %-14s %-8s %10d %v\n", v.Path, fmt.Sprint(v.Shape), v.DType, v.Params, v.Trainable)
	}
}
