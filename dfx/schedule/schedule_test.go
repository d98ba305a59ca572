package schedule

import (
	"errors"
	"math"
	"testing"
)

func allSchedules(t *testing.T) []Schedule {
	t.Helper()
	var out []Schedule
	for _, n := range Names {
		s, err := ByName(n, Params{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	d, err := NewDDPM(ScaledLinearBetas(0.00085, 0.012, 1000))
	if err != nil {
		t.Fatal(err)
	}
	return append(out, d)
}

// interior returns sample times inside the interval, away from DDPM nodes.
func interior(s Schedule) []float64 {
	lo, hi := s.Interval()
	var ts []float64
	for _, f := range []float64{0.0137, 0.1137, 0.3137, 0.5137, 0.7137, 0.9137} {
		ts = append(ts, lo+f*(hi-lo))
	}
	return ts
}

func TestDerivativesMatchFiniteDifferences(t *testing.T) {
	for _, s := range allSchedules(t) {
		lo, hi := s.Interval()
		for _, tt := range interior(s) {
			h := 1e-6 * (hi - lo)
			if d, ok := s.(*DDPM); ok {
				h = 1e-3 * d.nodeTime
			}
			fdA := (s.Alpha(tt+h) - s.Alpha(tt-h)) / (2 * h)
			fdS := (s.Sigma(tt+h) - s.Sigma(tt-h)) / (2 * h)
			if !close(fdA, s.DAlpha(tt), 1e-6) {
				t.Errorf("%s t=%g: dα/dt = %g, finite difference %g", s.Name(), tt, s.DAlpha(tt), fdA)
			}
			if !close(fdS, s.DSigma(tt), 1e-6) {
				t.Errorf("%s t=%g: dσ/dt = %g, finite difference %g", s.Name(), tt, s.DSigma(tt), fdS)
			}
		}
	}
}

func close(a, b, rel float64) bool {
	return math.Abs(a-b) <= rel*math.Max(1e-8, math.Max(math.Abs(a), math.Abs(b)))
}

// f = d log α/dt and g² = dσ²/dt − 2 f σ² (paper eq. diffusion_sde), checked
// against finite differences of log α and σ², and against closed forms.
func TestDriftAndDiffusionFollowTheDefinitions(t *testing.T) {
	for _, s := range allSchedules(t) {
		for _, tt := range interior(s) {
			h := 1e-6
			if d, ok := s.(*DDPM); ok {
				h = 1e-3 * d.nodeTime
			}
			fdF := (math.Log(s.Alpha(tt+h)) - math.Log(s.Alpha(tt-h))) / (2 * h)
			s2 := func(u float64) float64 { return s.Sigma(u) * s.Sigma(u) }
			fdG2 := (s2(tt+h)-s2(tt-h))/(2*h) - 2*fdF*s2(tt)
			if !close(fdF, F(s, tt), 1e-6) && math.Abs(fdF-F(s, tt)) > 1e-9 {
				t.Errorf("%s t=%g: f = %g, definition gives %g", s.Name(), tt, F(s, tt), fdF)
			}
			if !close(fdG2, G2(s, tt), 1e-5) {
				t.Errorf("%s t=%g: g² = %g, definition gives %g", s.Name(), tt, G2(s, tt), fdG2)
			}
			if G2(s, tt) <= 0 {
				t.Errorf("%s t=%g: g² = %g must be positive", s.Name(), tt, G2(s, tt))
			}
		}
	}
	vp, sub := DefaultVP(), DefaultSubVP()
	for _, tt := range []float64{0.01, 0.5, 1} {
		if !close(G2(vp, tt), vp.Beta(tt), 1e-12) {
			t.Errorf("VP g²(%g) = %g, want β(t) = %g", tt, G2(vp, tt), vp.Beta(tt))
		}
		a := sub.Alpha(tt)
		if want := vp.Beta(tt) * (1 - math.Pow(a, 4)); !close(G2(sub, tt), want, 1e-10) {
			t.Errorf("sub-VP g²(%g) = %g, want β(1−α⁴) = %g", tt, G2(sub, tt), want)
		}
	}
	if ed := DefaultEDM(); !close(G2(ed, 3), 6, 1e-14) {
		t.Errorf("EDM g²(3) = %g, want 2t = 6", G2(ed, 3))
	}
}

func TestDefaultsMatchTheSpecification(t *testing.T) {
	ve := DefaultVE()
	if !close(ve.Sigma(0), 0.01, 1e-14) || !close(ve.Sigma(1), 50, 1e-14) || !close(SigmaT(ve), 50, 1e-14) {
		t.Errorf("VE σ(0), σ(1) = %g, %g", ve.Sigma(0), ve.Sigma(1))
	}
	vp := DefaultVP()
	if want := math.Exp(-0.25*19.9 - 0.05); !close(vp.Alpha(1), want, 1e-14) {
		t.Errorf("VP α(1) = %g, want %g", vp.Alpha(1), want)
	}
	if a, s := vp.Alpha(0.3), vp.Sigma(0.3); !close(a*a+s*s, 1, 1e-14) {
		t.Errorf("VP α²+σ² = %g", a*a+s*s)
	}
	sub := DefaultSubVP()
	if a := sub.Alpha(0.3); !close(sub.Sigma(0.3), 1-a*a, 1e-14) {
		t.Errorf("sub-VP σ ≠ 1−α²")
	}
	lin := DefaultLinear()
	if lin.Alpha(0.25) != 0.75 || lin.Sigma(0.25) != 0.25 {
		t.Errorf("linear α, σ wrong")
	}
	if lo, hi := DefaultEDM().Interval(); lo != 0.002 || hi != 80 {
		t.Errorf("EDM interval [%g, %g]", lo, hi)
	}
}

func TestParamsOverrideDefaults(t *testing.T) {
	s, err := ByName("ve", Params{SigmaMin: 0.002, SigmaMax: 80})
	if err != nil {
		t.Fatal(err)
	}
	if !close(s.Sigma(1), 80, 1e-14) || !close(s.Sigma(0), 0.002, 1e-14) {
		t.Errorf("override ignored: %v", s)
	}
	s, err = ByName("vp", Params{BetaMin: 0.2, BetaMax: 10, TMax: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if _, hi := s.Interval(); hi != 0.5 || s.(VP).BetaMax != 10 {
		t.Errorf("override ignored: %v", s)
	}
}

func TestOutOfRangeTimesAreErrors(t *testing.T) {
	for _, s := range allSchedules(t) {
		lo, hi := s.Interval()
		for _, bad := range []float64{lo - 1e-3, hi + 1e-3, math.NaN(), math.Inf(1)} {
			if err := Check(s, bad); !errors.Is(err, ErrTime) {
				t.Errorf("%s: Check(%g) = %v, want ErrTime", s.Name(), bad, err)
			}
			if _, err := At(s, bad); err == nil {
				t.Errorf("%s: At(%g) gave no error", s.Name(), bad)
			}
		}
		if err := Check(s, lo); err != nil {
			t.Errorf("%s: Check(t_min) = %v", s.Name(), err)
		}
	}
	// σ(t) = 0 at t = 0 for EDM and linear: an interval reaching 0 is rejected.
	if _, err := ByName("edm", Params{TMin: -1}); err == nil {
		t.Error("EDM with t_min < 0 accepted")
	}
	if err := Check(EDM{TMin: 0, TMax: 1}, 0); !errors.Is(err, ErrTime) {
		t.Errorf("σ = 0 not rejected: %v", err)
	}
	if _, err := ByName("vp", Params{BetaMin: 20, BetaMax: -5}); err == nil {
		t.Error("VP with decreasing negative β accepted")
	}
	if _, err := ByName("ve", Params{SigmaMin: 10, SigmaMax: 1}); err == nil {
		t.Error("VE with σ_min > σ_max accepted")
	}
	if _, err := ByName("nope", Params{}); err == nil {
		t.Error("unknown schedule accepted")
	}
	if _, err := NewDDPM([]float64{0.1, 1.5}); err == nil {
		t.Error("β ≥ 1 accepted")
	}
}

func TestTimeGridsAreDecreasingAndHitTheirSigmas(t *testing.T) {
	for _, s := range allSchedules(t) {
		lo, hi := s.Interval()
		t0, t1 := lo+0.01*(hi-lo), hi
		for _, kind := range []string{GridUniform, GridLogSigma, GridKarras, GridLogSNR} {
			ts, err := TimeGrid(s, kind, t0, t1, 10)
			if err != nil {
				t.Fatalf("%s %s: %v", s.Name(), kind, err)
			}
			if len(ts) != 11 || ts[0] != t1 || ts[10] != t0 {
				t.Fatalf("%s %s: bad ends %v", s.Name(), kind, ts)
			}
			for i := 1; i < len(ts); i++ {
				if !(ts[i] < ts[i-1]) {
					t.Fatalf("%s %s: not decreasing %v", s.Name(), kind, ts)
				}
			}
			if kind == GridLogSigma {
				r0 := math.Log(s.Sigma(ts[1]) / s.Sigma(ts[0]))
				r1 := math.Log(s.Sigma(ts[6]) / s.Sigma(ts[5]))
				if !close(r0, r1, 1e-6) {
					t.Errorf("%s logsigma grid not uniform in log σ: %g vs %g", s.Name(), r0, r1)
				}
			}
			if kind == GridLogSNR {
				r0 := LogSNR(s, ts[1]) - LogSNR(s, ts[0])
				r1 := LogSNR(s, ts[6]) - LogSNR(s, ts[5])
				if !close(r0, r1, 1e-6) || !(r0 > 0) {
					t.Errorf("%s logsnr grid not uniform in log(α/σ): %g vs %g", s.Name(), r0, r1)
				}
			}
		}
		if _, err := TimeGrid(s, GridUniform, t1, t0, 10); err == nil {
			t.Errorf("%s: reversed grid accepted", s.Name())
		}
		if _, err := TimeGrid(s, GridUniform, t0, t1, 0); err == nil {
			t.Errorf("%s: M = 0 accepted", s.Name())
		}
	}
}

func TestDDPMMatchesItsBetaTable(t *testing.T) {
	betas := ScaledLinearBetas(0.00085, 0.012, 1000)
	if !close(betas[0], 0.00085, 1e-12) || !close(betas[999], 0.012, 1e-12) {
		t.Fatalf("table ends %g %g", betas[0], betas[999])
	}
	d, _ := NewDDPM(betas)
	ab := 1.0
	for k := 0; k < 1000; k++ {
		ab *= 1 - betas[k]
		tk := float64(k) / 1000
		if k > 0 && !close(d.Alpha(tk)*d.Alpha(tk), ab, 1e-10) {
			t.Fatalf("α(t_%d)² = %g, ᾱ = %g", k, d.Alpha(tk)*d.Alpha(tk), ab)
		}
	}
	if tt := 0.5005; !close(G2(d, tt), -2*F(d, tt), 1e-10) {
		t.Errorf("DDPM g² ≠ −2f")
	}
	if !close(G2(d, 0.5005), d.DiscreteG2(501), 1e-2) {
		t.Errorf("continuous g² %g far from Kβ = %g", G2(d, 0.5005), d.DiscreteG2(501))
	}
}

func TestByNameRefusesAParameterTheScheduleWouldIgnore(t *testing.T) {
	if _, err := ByName("ve", Params{BetaMax: 10}); err == nil {
		t.Error("β_max accepted for VE")
	}
	if s, err := ByName("vp", Params{BetaMax: 10}); err != nil || s.(VP).BetaMax != 10 {
		t.Errorf("VP with β_max = 10: %v, %v", s, err)
	}
}
