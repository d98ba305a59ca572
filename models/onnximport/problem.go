package onnximport

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/dfx-lab/dfx/dfx/schedule"

	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/models/checkpoint"
	"github.com/dfx-lab/dfx/problem"
)

// Data are a researcher's data set and imported ε-network: what
// NewProblem makes a problem.Problem of.
type Data struct {
	Name string // names the problem in tables and folders
	// Eps is the ε-network's checkpoint (written by dfx import).
	Eps *checkpoint.Checkpoint
	// Train and Test are the data, one flat row a point in the network's
	// layout (Test nil: none).
	Train, Test *mat.Dense
	// Levels, for 8-bit-like images on [−1, 1], is the number of pixel
	// levels (256): with an image layout [C, H, W] the problem is an image
	// problem whose bits per dimension count on that grid (0: not images).
	Levels int
}

// Trace network files NewProblem's Networks reads from its folder: those
// dfx train dftm|dftm-c -eps writes.
const (
	TraceFile        = "dftm.dfxckpt"
	CentredTraceFile = "dftm-c.dfxckpt"
)

// NewProblem is the problem of a researcher's data and imported network:
// its dimension, schedule and (with Levels) image shape are the
// network's; the exact reference is the Dirac mixture of the training
// points; Networks(ctx, nets) is the ε-network with, where the folder nets
// holds them (TraceFile, CentredTraceFile; made for this ε-network, which
// checkpoint.CheckPair checks), t_θ and ν_θ. Every study written over a
// problem.Problem then runs on it. Errors about d wrap ErrBadInput.
func NewProblem(d Data) (*problem.Problem, error) {
	if d.Eps == nil || d.Train == nil {
		return nil, badInput("a problem needs the ε-network and the training points")
	}
	if _, _, err := importedEps(d.Eps); err != nil {
		return nil, err
	}
	sched, err := d.Eps.Header.Provenance.Schedule.Schedule()
	if err != nil {
		return nil, err
	}
	dim := d.Eps.Header.Dim
	for name, x := range map[string]*mat.Dense{"training": d.Train, "test": d.Test} {
		if x != nil {
			if _, c := x.Dims(); c != dim {
				return nil, badInput("the %s points have %d values each, the ε-network takes %d", name, c, dim)
			}
		}
	}
	p := &problem.Problem{Name: d.Name, Dim: dim, Schedule: sched, Train: rowsOf(d.Train)}
	if d.Test != nil {
		p.Test = rowsOf(d.Test)
	}
	if err := imageShape(p, d); err != nil {
		return nil, err
	}
	exact, err := mixture.NewDirac(d.Train, nil)
	if err != nil {
		return nil, badInput("%v", err)
	}
	p.Exact = problem.ExactFrom(exact)
	p.Networks = func(_ context.Context, nets string) (*problem.Networks, error) { return networksOf(d.Eps, sched, nets) }
	return p, p.Check()
}

// rowsOf is a Train/Test function that returns x.
func rowsOf(x *mat.Dense) func(context.Context) (*mat.Dense, error) {
	return func(context.Context) (*mat.Dense, error) { return x, nil }
}

// imageShape sets p.Image from the network's layout [C, H, W] when d says
// the points are images.
func imageShape(p *problem.Problem, d Data) error {
	if d.Levels == 0 {
		return nil
	}
	store, err := loadCopy(d.Eps)
	if err != nil {
		return err
	}
	spec, err := models.ONNXSpecOf(store.RootScope().At(models.ScoreScope))
	if err != nil {
		return err
	}
	if len(spec.Layout) != 3 || d.Levels < 2 {
		return badInput("images need the layout [C, H, W] and ≥ 2 levels, the network takes %v, levels %d", spec.Layout, d.Levels)
	}
	p.Image = problem.ImageShape{C: spec.Layout[0], H: spec.Layout[1], W: spec.Layout[2], Levels: d.Levels}
	return nil
}

// networksOf is the ε-network in eps with the trace networks of the folder
// nets ("": none) as problem.Networks, on the backend models.NewBackend
// picks. ν_θ is used only beside t_θ (the access contract builds both from
// one store).
func networksOf(eps *checkpoint.Checkpoint, sched schedule.Schedule, nets string) (*problem.Networks, error) {
	store, err := loadCopy(eps)
	if err != nil {
		return nil, err
	}
	about, records := "imported ε-network", map[string]*problem.TrainRecord{}
	for _, name := range []string{TraceFile, CentredTraceFile} {
		if nets == "" || name == CentredTraceFile && !models.HasNetwork(store, models.TraceScope) {
			break
		}
		c, err := checkpoint.Read(filepath.Join(nets, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return nil, err
		}
		if err := addTrace(store, eps, c); err != nil {
			return nil, badInput("%s: %v", filepath.Join(nets, name), err)
		}
		about += " + " + name
		var rec TraceRecord
		if json.Unmarshal(c.Header.Config, &rec) == nil {
			records[strings.TrimSuffix(name, filepath.Ext(name))] = &problem.TrainRecord{Steps: rec.Steps, Seconds: rec.Seconds,
				Machine: rec.Machine, Backend: rec.Backend, Curve: rec.Curve}
		}
	}
	backend, err := models.NewBackend()
	if err != nil {
		return nil, err
	}
	net, err := models.NewAccessNet(backend, store, sched, models.HasNetwork(store, models.TraceScope))
	if err != nil {
		return nil, err
	}
	return &problem.Networks{Net: net, About: about, Backend: backend.Name(), Records: records}, nil
}
