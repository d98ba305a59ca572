package mnist

import (
	"fmt"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/models/checkpoint"
)

// OpenFiles loads the networks of checkpoint files on backend
// (checkpoint.ReadSet): an ε-network of one's own (e.g. written by dfx
// import) and, where a run needs one, the t_θ or ν_θ that dfx train dftm
// -eps trained for it. The networks must take points of Dim values and
// have been trained on Schedule(); for a class-conditional run (plain
// sampling with classifier-free guidance, adjoint guidance) the ε-network
// must know the ten classes (null class 10). need is the trace network the run uses (models.TraceScope,
// CentredTraceScope, or "" for none) and usedBy names what uses it in
// messages (e.g. "-trace df-tm"). Net is built over the files' networks,
// so every trace and F·v estimator runs on them; Classifier is nil until
// LoadClassifier. Every mismatch is an error wrapping checkpoint.ErrInvalid.
func OpenFiles(backend compute.Backend, paths []string, need, usedBy string, conditional bool) (*Networks, error) {
	set, err := checkpoint.ReadSet(paths, Dim, Schedule())
	if err != nil {
		return nil, fmt.Errorf("mnist: %w", err)
	}
	if err := set.Use(need, usedBy); err != nil {
		return nil, fmt.Errorf("mnist: %w", err)
	}
	if k := model.GetRootParamOr(set.Store, models.ParamNumClasses, 0); conditional && k != 10 {
		return nil, fmt.Errorf("mnist: checkpoint %s: %s samples MNIST's 10 classes (and the null class 10), the network knows %d: %w",
			set.File[models.ScoreScope], usedBy, k, checkpoint.ErrInvalid)
	}
	net, err := models.NewAccessNet(backend, set.Store, Schedule(), need != "")
	if err != nil {
		return nil, err
	}
	if need != models.TraceScope {
		net.T = nil
	}
	if need != models.CentredTraceScope {
		net.Nu = nil
	}
	return &Networks{Backend: backend, Store: set.Store, Net: net, Records: map[string]*TrainRecord{}}, nil
}

// LoadClassifier loads the clean-image classifier of dir ("" the committed
// one; LoadNetwork) beside networks opened from files, for the rewards of
// adjoint guidance.
func (n *Networks) LoadClassifier(dir string) error {
	store, rec, err := LoadNetwork(dir, "classifier")
	if err != nil {
		return err
	}
	if n.Classifier, err = models.NewClassifier(n.Backend, store, Dim); err != nil {
		return err
	}
	n.Records["classifier"] = rec
	return nil
}
