package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"github.com/dfx-lab/dfx/ot"
)

func writeText(w io.Writer, out *ot.Outcome, perChain bool, sched string, grid []float64, sol ot.Solver) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	k, _ := out.X0.Dims()
	fmt.Fprintf(w, "schedule %s, %s, %d steps from t = %g to s = %g, %d chains; rates in %%\n",
		sched, sol, len(grid)-1, grid[0], grid[len(grid)-1], k)
	for r, rule := range out.Rules {
		fmt.Fprintf(w, "\nmatrix %s\n", rule)
		if perChain {
			fmt.Fprintln(tw, "chain\tI\toff-diag\tI(A⁻¹)\tλ_min\tOT\t")
			for c, v := range out.Verdicts[r] {
				fmt.Fprintf(tw, "%d\t%.4f\t%.4f\t%.4f\t%.4g\t%v\t\n", c, 100*v.Asym, 100*v.AsymOffDiag, 100*v.AsymInverse, v.MinEig, v.OT)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		s := out.Summary[r]
		fmt.Fprintf(w, "summary: I = %.4f ± %.4f (worst %.4f); off-diag %.4f ± %.4f; I(A⁻¹) %.4f; λ_min ≥ %.4g; OT-compatible %d/%d chains; verdict: %s\n",
			100*s.Asym.Mean, 100*s.Asym.Std, 100*s.Asym.Worst, 100*s.AsymOffDiag.Mean, 100*s.AsymOffDiag.Std,
			100*s.AsymInverse.Mean, s.MinEig.Worst, s.Chains-int(math.Round(s.FailFrac*float64(s.Chains))), s.Chains, s.Word())
	}
	return nil
}

// jsonNum keeps NaN/Inf out of the JSON (null instead).
type jsonNum float64

func (v jsonNum) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(v))
}

type jsonStat struct{ Mean, Std, Worst jsonNum }

func toJSONStat(s ot.Stat) jsonStat {
	return jsonStat{jsonNum(s.Mean), jsonNum(s.Std), jsonNum(s.Worst)}
}

type jsonChain struct {
	Chain       int       `json:"chain"`
	XT          []float64 `json:"x_T"`
	XS          []float64 `json:"x_s"`
	Matrix      []float64 `json:"matrix"`
	Asym        jsonNum   `json:"asym"`
	AsymOffDiag jsonNum   `json:"asym_offdiag"`
	AsymInverse jsonNum   `json:"asym_inverse"`
	MinEig      jsonNum   `json:"min_eig"`
	OT          bool      `json:"ot"`
}

type jsonRule struct {
	Matrix  ot.Rule     `json:"matrix"`
	Chains  []jsonChain `json:"chains,omitempty"`
	Summary struct {
		Chains      int      `json:"chains"`
		Asym        jsonStat `json:"asym"`
		AsymOffDiag jsonStat `json:"asym_offdiag"`
		AsymInverse jsonStat `json:"asym_inverse"`
		MinEig      jsonStat `json:"min_eig"`
		FailFrac    float64  `json:"fail_frac"`
		OT          bool     `json:"ot"`
	} `json:"summary"`
}

func writeJSON(w io.Writer, out *ot.Outcome, perChain bool, grid []float64) error {
	doc := struct {
		Grid  []float64  `json:"grid"`
		Rules []jsonRule `json:"results"`
	}{Grid: grid}
	for r, rule := range out.Rules {
		jr := jsonRule{Matrix: rule}
		if perChain {
			for c, v := range out.Verdicts[r] {
				jr.Chains = append(jr.Chains, jsonChain{Chain: c, XT: out.X0.RawRowView(c), XS: out.Chains.X.RawRowView(c),
					Matrix: out.Chains.A[r][c].RawMatrix().Data, Asym: jsonNum(v.Asym), AsymOffDiag: jsonNum(v.AsymOffDiag),
					AsymInverse: jsonNum(v.AsymInverse), MinEig: jsonNum(v.MinEig), OT: v.OT})
			}
		}
		s := out.Summary[r]
		jr.Summary.Chains, jr.Summary.FailFrac, jr.Summary.OT = s.Chains, s.FailFrac, s.OT
		jr.Summary.Asym, jr.Summary.AsymOffDiag = toJSONStat(s.Asym), toJSONStat(s.AsymOffDiag)
		jr.Summary.AsymInverse, jr.Summary.MinEig = toJSONStat(s.AsymInverse), toJSONStat(s.MinEig)
		doc.Rules = append(doc.Rules, jr)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
