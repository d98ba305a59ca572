package checkpoint

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/models"
)

// weightsOf is the weights checkpoint of tr's networks, with provenance p
// as SaveTrainer would record it.
func weightsOf(t *testing.T, tr *models.Trainer, p Provenance, nets ...string) *Checkpoint {
	t.Helper()
	if tr.Step() == 0 { // the variables exist once a step has run
		if _, err := tr.TrainSteps(1); err != nil {
			t.Fatal(err)
		}
	}
	c, err := Weights(tr.Store, tr.Dim(), nets, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Header.Provenance, err = trainerProvenance(tr, p); err != nil {
		t.Fatal(err)
	}
	raw, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(raw, "weights")
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// tinyTrace is a DF-TM network trained one step, stamped as made for eps.
func tinyTrace(t *testing.T, eps *Checkpoint) *Checkpoint {
	t.Helper()
	data, _ := tinyData(64, 3)
	tr, err := models.NewTrainer(models.MustNewTrainBackend(), tinyStore(), schedule.DefaultVP(), models.DFTM, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.TrainSteps(1); err != nil {
		t.Fatal(err)
	}
	p := testProvenance
	if p.EpsNetwork, err = Digest(eps, models.ScoreScope); err != nil {
		t.Fatal(err)
	}
	return weightsOf(t, tr, p, models.TraceScope)
}

func TestCheckPairRefusesAnotherEpsNetworkOrOtherData(t *testing.T) {
	a, b := newTinyTrainer(t, 16), newTinyTrainer(t, 16)
	if _, err := b.TrainSteps(2); err != nil { // b: same architecture, other weights
		t.Fatal(err)
	}
	epsA, epsB := weightsOf(t, a, testProvenance, models.ScoreScope), weightsOf(t, b, testProvenance, models.ScoreScope)
	trace := tinyTrace(t, epsA)
	if err := CheckPair(epsA, trace); err != nil {
		t.Fatalf("the pair trained together is refused: %v", err)
	}
	if err := CheckPair(epsB, trace); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "ε-network") {
		t.Errorf("t_θ with another ε-network: %v", err)
	}
	other := *trace
	p := *trace.Header.Provenance
	p.Data = "another data set"
	other.Header.Provenance = &p
	if err := CheckPair(epsA, &other); !errors.Is(err, ErrInvalid) {
		t.Errorf("t_θ trained on other data: %v", err)
	}
	if err := CheckSchedule(epsA, schedule.DefaultVP()); err != nil {
		t.Errorf("own schedule refused: %v", err)
	}
	if err := CheckSchedule(epsA, schedule.DefaultVE()); !errors.Is(err, ErrInvalid) {
		t.Errorf("a VP network used on the VE schedule: %v", err)
	}
	if err := CheckSchedule(epsA, schedule.VP{BetaMin: 0.1, BetaMax: 19, TMin: 1e-5, TMax: 1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a VP network used with another β_max: %v", err)
	}
}

func TestNetworkDigestIgnoresTrainingOnlyParamsAndRestamping(t *testing.T) {
	a := newTinyTrainer(t, 16)
	c := weightsOf(t, a, testProvenance, models.ScoreScope)
	d1, _ := Digest(c, models.ScoreScope)
	c.Header.Params["/"+models.ParamSeed] = "int:99"
	d2, _ := Digest(c, models.ScoreScope)
	c.Header.Params["/"+models.ParamEmbedDim] = "int:9"
	d3, _ := Digest(c, models.ScoreScope)
	if d1 != d2 || d1 == d3 {
		t.Errorf("digest: %.8s, with another seed %.8s (want equal), another embedding %.8s (want different)", d1, d2, d3)
	}
	store, err := LoadWeights(weightsOf(t, a, testProvenance, models.ScoreScope))
	if err != nil {
		t.Fatal(err)
	}
	if d4, _ := NetworkDigest(store, models.ScoreScope); d4 != d1 {
		t.Errorf("NetworkDigest of the loaded store %.8s, of the checkpoint %.8s", d4, d1)
	}
}

// legacyFile rewrites a checkpoint as format v2 (no provenance).
func legacyFile(t *testing.T, c *Checkpoint) []byte {
	t.Helper()
	h := c.Header
	h.Provenance = nil
	hdr, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	return rawWithHeader(c, hdr, legacyVersion)
}

func TestV2FilesDecodeButNeverLoadUntilRestamped(t *testing.T) {
	a := newTinyTrainer(t, 16)
	c := weightsOf(t, a, testProvenance, models.ScoreScope)
	old := legacyFile(t, c)
	dec, err := Decode(old, "v2")
	if err != nil {
		t.Fatalf("a v2 file does not decode: %v", err)
	}
	if dec.Header.Provenance != nil || dec.Version() != 2 {
		t.Fatalf("v2 file: provenance %v, version %d", dec.Header.Provenance, dec.Version())
	}
	if _, err := LoadWeights(dec); !errors.Is(err, ErrNoProvenance) || !errors.Is(err, ErrInvalid) {
		t.Errorf("LoadWeights of a v2 file: %v", err)
	}
	if err := Verify(dec); !errors.Is(err, ErrNoProvenance) {
		t.Errorf("Verify of a v2 file: %v", err)
	}
	raw, err := Restamp(old, "v2", schedule.DefaultVP(), testProvenance)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(raw, "restamped")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadWeights(back); err != nil {
		t.Errorf("the re-stamped file does not load: %v", err)
	}
	da, _ := Digest(c, models.ScoreScope)
	db, _ := Digest(back, models.ScoreScope)
	if da != db {
		t.Error("re-stamping changed the network")
	}
}

func TestCorruptProvenanceIsRefused(t *testing.T) {
	a := newTinyTrainer(t, 16)
	good := weightsOf(t, a, testProvenance, models.ScoreScope)
	raw, err := good.Encode()
	if err != nil {
		t.Fatal(err)
	}
	// Each mutation is written with a valid checksum (Encode would refuse it).
	mutate := func(f func(p *Provenance, h *Header)) []byte {
		c, _ := Decode(raw, "x")
		p := *c.Header.Provenance
		f(&p, &c.Header)
		c.Header.Provenance = &p
		hdr, _ := json.Marshal(c.Header)
		return rawWithHeader(c, hdr, checkpointVersion)
	}
	cases := map[string][]byte{
		"empty data":        mutate(func(p *Provenance, _ *Header) { p.Data = "" }),
		"control character": mutate(func(p *Provenance, _ *Header) { p.Scaling = "a\x00b" }),
		"overlong field":    mutate(func(p *Provenance, _ *Header) { p.Dequantize = strings.Repeat("x", 300) }),
		"unknown schedule":  mutate(func(p *Provenance, _ *Header) { p.Schedule = &ScheduleSpec{Name: "cosine"} }),
		"schedule parameter": mutate(func(p *Provenance, _ *Header) {
			p.Schedule = &ScheduleSpec{Name: "vp", Params: map[string]float64{"beta_min": -1}}
		}),
		"no schedule":           mutate(func(p *Provenance, _ *Header) { p.Schedule = nil }),
		"parameterisation":      mutate(func(p *Provenance, _ *Header) { p.Param = "v" }),
		"ε digest on ε-network": mutate(func(p *Provenance, _ *Header) { p.EpsNetwork = strings.Repeat("a", 64) }),
		"t_θ without ε digest":  mutate(func(p *Provenance, h *Header) { h.Networks = []string{models.TraceScope} }),
		"t_θ with a malformed one": mutate(func(p *Provenance, h *Header) {
			h.Networks, p.EpsNetwork = []string{models.TraceScope}, strings.Repeat("G", 64)
		}),
		"v3 without provenance":    rawWithHeader(good, mustJSON(t, headerWithout(good.Header)), checkpointVersion),
		"v2 with provenance":       rawWithHeader(good, mustJSON(t, good.Header), legacyVersion),
		"unknown provenance field": rawWithHeader(good, bytes.Replace(mustJSON(t, good.Header), []byte(`"Provenance":{`), []byte(`"Provenance":{"Extra":1,`), 1), checkpointVersion),
	}
	for name, b := range cases {
		if _, err := Decode(b, name); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: decoded (err %v)", name, err)
		}
	}
}

// TestTrainerResumeRefusesOtherProvenance: a saved state resumes only into
// a run on the same data and schedule.
func TestTrainerResumeRefusesOtherProvenance(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.dfxckpt")
	a := newTinyTrainer(t, 16)
	if err := SaveTrainer(a, testProvenance, path); err != nil {
		t.Fatal(err)
	}
	b := newTinyTrainer(t, 16)
	otherData := testProvenance
	otherData.Data = "another data set"
	if err := LoadTrainer(b, otherData, path); !errors.Is(err, ErrInvalid) {
		t.Errorf("resume on other data: %v", err)
	}
	c := newTinyTrainer(t, 16)
	c.Schedule = schedule.VP{BetaMin: 0.1, BetaMax: 10, TMin: 1e-5, TMax: 1}
	if err := LoadTrainer(c, testProvenance, path); !errors.Is(err, ErrInvalid) {
		t.Errorf("resume on another schedule: %v", err)
	}
}

func headerWithout(h Header) Header { h.Provenance = nil; return h }

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rawWithHeader is c's file with the given header bytes and version, checksummed.
func rawWithHeader(c *Checkpoint, hdr []byte, version uint32) []byte {
	raw, err := frame(hdr, version, c.Values, func(int) string { return "" })
	if err != nil {
		panic(err)
	}
	return raw
}
