package adjoint

import (
	"gonum.org/v1/gonum/floats"

	"github.com/dfx-lab/dfx/dfx/access"
	dfxadjoint "github.com/dfx-lab/dfx/dfx/adjoint"
	"github.com/dfx-lab/dfx/dfx/mixture"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/dfx/score"
)

// methodNames are the names an exact-operator study gives its four guided
// samplers in its tables.
type methodNames struct {
	Exact   string // the exact model and the exact F v
	VJP     string // the network and the VJP through it
	EANet   string // the network and DF-EA with the network's ȳ
	EAExact string // the exact model and DF-EA: the endpoint approximation alone
}

// studyNames are the names of the Dirac-mixture study's tables.
var studyNames = methodNames{Exact: StudyExact, VJP: StudyVJP, EANet: StudyEANet, EAExact: StudyEAExact}

// operatorGuides are the guides of an exact-operator study on schedule s,
// by names: the exact model of mix with the exact operator and with DF-EA
// and, where net is not nil, the network with the operator vjp and with
// DF-EA. Every guide minimises loss.
func operatorGuides(s schedule.Schedule, mix mixture.Mixture, net *access.Net, vjp score.FisherOperator, loss dfxadjoint.Loss,
	names methodNames) map[string]dfxadjoint.Guide {
	exact := score.Exact{Mixture: mix}
	gs := map[string]dfxadjoint.Guide{
		names.Exact:   {Schedule: s, Model: exact, Operator: exact, Loss: loss},
		names.EAExact: {Schedule: s, Model: exact, Operator: access.DFEA{}, Loss: loss},
	}
	if net != nil {
		model := access.NetModel{Net: net}
		gs[names.VJP] = dfxadjoint.Guide{Schedule: s, Model: model, Operator: vjp, Loss: loss}
		gs[names.EANet] = dfxadjoint.Guide{Schedule: s, Model: model, Operator: access.DFEA{}, Loss: loss}
	}
	return gs
}

// cosine is ⟨a, b⟩ / (‖a‖ ‖b‖).
func cosine(a, b []float64) float64 {
	return floats.Dot(a, b) / (floats.Norm(a, 2) * floats.Norm(b, 2))
}
