package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/models"
)

// tinyData is a 2-D mixture of four points with small jitter.
func tinyData(n int, seed uint64) ([][]float64, []int) {
	rng := rand.New(rand.NewPCG(seed, 1))
	centres := [][]float64{{1, 1}, {-1, 1}, {-1, -1}, {1, -1}}
	data, labels := make([][]float64, n), make([]int, n)
	for i := range data {
		c := rng.IntN(4)
		data[i] = []float64{centres[c][0] + 0.05*rng.NormFloat64(), centres[c][1] + 0.05*rng.NormFloat64()}
		labels[i] = c
	}
	return data, labels
}

// tinyStore holds the hyperparameters of a small, fast network.
func tinyStore() *model.Store {
	store := models.NewStore()
	store.SetParams(map[string]any{models.ParamWidth: 16, models.ParamDepth: 1, models.ParamEmbedDim: 8, models.ParamBatchSize: 32,
		models.ParamLearningRate: 3e-3})
	return store
}

// rawVariables returns every variable's raw bytes by path.
func rawVariables(t *testing.T, store *model.Store) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for v := range store.IterVariables() {
		if strings.HasPrefix(v.Path(), "/metrics/") { // GoMLX names them with a random UUID
			continue
		}
		val, err := v.Value()
		if err != nil {
			t.Fatal(err)
		}
		if err := val.ConstBytes(func(b []byte) { out[v.Path()] = bytes.Clone(b) }); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func newTinyTrainer(t *testing.T, width int) *models.Trainer {
	t.Helper()
	data, labels := tinyData(64, 3)
	ctx := tinyStore()
	ctx.SetParams(map[string]any{models.ParamWidth: width, models.ParamNumClasses: 4})
	tr, err := models.NewTrainer(models.MustNewTrainBackend(), ctx, schedule.DefaultVP(), models.DSM, data, labels)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// testProvenance is the data provenance of the tiny trainers.
var testProvenance = Provenance{Data: "tinyData(64, 3)", Scaling: "none", Dequantize: "none"}

func TestCheckpointResumesExactly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ckpt.dfx")
	a := newTinyTrainer(t, 16)
	if _, err := a.TrainSteps(7); err != nil {
		t.Fatal(err)
	}
	if err := SaveTrainer(a, testProvenance, path); err != nil {
		t.Fatal(err)
	}
	if _, err := a.TrainSteps(5); err != nil {
		t.Fatal(err)
	}
	b := newTinyTrainer(t, 16)
	if err := LoadTrainer(b, testProvenance, path); err != nil {
		t.Fatal(err)
	}
	if b.Step() != 7 {
		t.Fatalf("step %d after load, want 7", b.Step())
	}
	if _, err := b.TrainSteps(5); err != nil {
		t.Fatal(err)
	}
	wa, wb := rawVariables(t, a.Store), rawVariables(t, b.Store)
	if len(wa) != len(wb) {
		t.Fatalf("%d variables vs %d", len(wa), len(wb))
	}
	for k, v := range wa {
		if !slices.Equal(v, wb[k]) {
			t.Fatalf("variable %s differs after save/load/resume", k)
		}
	}
}

// forge re-encodes a decoded checkpoint after mutate, with a valid
// checksum, so that only the structural checks can reject it.
func forge(t *testing.T, raw []byte, mutate func(c *Checkpoint)) []byte {
	t.Helper()
	c, err := Decode(raw, "test")
	if err != nil {
		t.Fatal(err)
	}
	mutate(c)
	out, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCheckpointRejectsCorruptTruncatedForgedAndMismatchedFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ckpt.dfx")
	a := newTinyTrainer(t, 16)
	if _, err := a.TrainSteps(2); err != nil {
		t.Fatal(err)
	}
	if err := SaveTrainer(a, testProvenance, path); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if err := LoadTrainer(newTinyTrainer(t, 16), testProvenance, path); err != nil {
		t.Fatalf("the file itself does not load: %v", err)
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// A huge header length with a recomputed, valid checksum: the bound must catch it.
	huge := slices.Clone(raw[:len(raw)-checksumLen])
	binary.LittleEndian.PutUint32(huge[12:], 0xfffffff0)
	sum := sha256.Sum256(huge)
	huge = append(huge, sum[:]...)
	index := func(c *Checkpoint, suffix string) int {
		for i, v := range c.Header.Variables {
			if strings.HasSuffix(v.Path, suffix) && strings.HasPrefix(v.Path, "/score/") {
				return i
			}
		}
		t.Fatalf("no variable %s", suffix)
		return -1
	}
	cases := map[string]string{
		"truncated":      write("trunc", raw[:len(raw)-100]),
		"not checkpoint": write("junk", []byte("hello world, this is not a checkpoint")),
		"empty":          write("empty", nil),
		"huge header":    write("huge", huge),
		"renamed scope": write("renamed", forge(t, raw, func(c *Checkpoint) {
			i := index(c, "block_0/dense1/weights_t")
			c.Header.Variables[i].Path = strings.Replace(c.Header.Variables[i].Path, "block_0", "block_7", 1)
		})),
		"duplicated variable": write("dup", forge(t, raw, func(c *Checkpoint) {
			i := index(c, "output/weights_t")
			c.Header.Variables = append(c.Header.Variables, c.Header.Variables[i])
			c.Values = append(c.Values, c.Values[i])
		})),
		"missing variable": write("missing", forge(t, raw, func(c *Checkpoint) {
			i := index(c, "output/biases")
			c.Header.Variables = slices.Delete(c.Header.Variables, i, i+1)
			c.Values = slices.Delete(c.Values, i, i+1)
		})),
		"unexpected variable": write("extra", forge(t, raw, func(c *Checkpoint) {
			c.Header.Variables = append(c.Header.Variables, Variable{Path: "/extra/w", DType: "Float32", Dims: []int{1}})
			c.Values = append(c.Values, tensors.FromValue([]float32{1}))
		})),
		"path without leading slash": write("relative", forge(t, raw, func(c *Checkpoint) {
			i := index(c, "output/biases")
			c.Header.Variables[i].Path = c.Header.Variables[i].Path[1:]
		})),
		"wrong shape": write("shape", forge(t, raw, func(c *Checkpoint) {
			i := index(c, "output/biases")
			c.Header.Variables[i].Dims = []int{c.Values[i].Shape().Size()}
			c.Values[i] = tensors.FromFlatDataAndDimensions(tensors.MustCopyFlatData[float32](c.Values[i]), c.Values[i].Shape().Size())
		})),
		"NaN weight": write("nan", forge(t, raw, func(c *Checkpoint) {
			i := index(c, "output/biases")
			v := tensors.MustCopyFlatData[float32](c.Values[i])
			v[0] = float32(math.NaN())
			c.Values[i] = tensors.FromFlatDataAndDimensions(v, c.Values[i].Shape().Dimensions...)
		})),
		"unknown dtype": write("dtype", forge(t, raw, func(c *Checkpoint) {
			c.Header.Variables[index(c, "output/biases")].DType = "Complex64"
		})),
		"changed hyperparameter": write("param", forge(t, raw, func(c *Checkpoint) { c.Header.Params["/"+models.ParamDepth] = "int:2" })),
		"other objective":        write("obj", forge(t, raw, func(c *Checkpoint) { c.Header.Objective = models.DFTM.String() })),
		"weights, not trainer":   write("kind", forge(t, raw, func(c *Checkpoint) { c.Header.Kind = KindWeights })),
	}
	for i := 0; i < len(raw); i += max(1, len(raw)/23) {
		b := slices.Clone(raw)
		b[i] ^= 1 << (i % 8)
		cases[fmt.Sprintf("bit flipped at byte %d", i)] = write(fmt.Sprintf("flip%d", i), b)
	}
	for name, p := range cases {
		if err := LoadTrainer(newTinyTrainer(t, 16), testProvenance, p); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
	if err := LoadTrainer(newTinyTrainer(t, 32), testProvenance, path); !errors.Is(err, ErrInvalid) {
		t.Errorf("width mismatch: got %v, want ErrInvalid", err)
	} else {
		t.Logf("mismatch message: %v", err)
	}
}

func TestWeightsCheckpointRoundTripsAndLoadsStrictly(t *testing.T) {
	a := newTinyTrainer(t, 16)
	if _, err := a.TrainSteps(3); err != nil {
		t.Fatal(err)
	}
	c, err := Weights(a.Store, a.Dim(), []string{models.ScoreScope}, []byte(`{"note":"test"}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Header.Provenance, err = trainerProvenance(a, testProvenance); err != nil {
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
	store, err := LoadWeights(back)
	if err != nil {
		t.Fatal(err)
	}
	ema, _ := models.EMAStore(a.Store)
	for v := range store.IterVariables() {
		want := tensors.MustCopyFlatData[float32](ema.GetVariable(v.Path()).MustValue())
		if !slices.Equal(tensors.MustCopyFlatData[float32](v.MustValue()), want) {
			t.Errorf("%s: not the EMA weights", v.Path())
		}
	}
	if got := model.GetRootParamOr(store, models.ParamWidth, 0); got != 16 {
		t.Errorf("width parameter %d after load, want 16", got)
	}
	wrongDType := forge(t, raw, func(c *Checkpoint) { c.Header.Params["/"+models.ParamDType] = "string:float64" })
	if c, err := Decode(wrongDType, "x"); err != nil {
		t.Fatal(err)
	} else if _, err := LoadWeights(c); !errors.Is(err, ErrInvalid) {
		t.Errorf("float32 weights for a float64 network: %v", err)
	}
	noNet := forge(t, raw, func(c *Checkpoint) {
		c.Header.Networks = []string{models.TraceScope}
		c.Header.Provenance.EpsNetwork = strings.Repeat("0", 64)
	})
	if c, err := Decode(noNet, "x"); err != nil {
		t.Fatal(err)
	} else if _, err := LoadWeights(c); !errors.Is(err, ErrInvalid) {
		t.Errorf("score weights declared as the DF-TM network: %v", err)
	}
}

// FuzzDecode: no input panics, every error wraps ErrInvalid,
// and whatever decodes re-encodes to a file that decodes to the same
// header and values. Each input is tried as a whole file and as a body
// with its checksum appended, so that the fuzzer also explores the header
// and data parser behind the checksum.
func FuzzDecode(f *testing.F) {
	c := &Checkpoint{Header: Header{Kind: KindWeights, Networks: []string{models.ScoreScope}, Dim: 2, Params: map[string]string{"/width": "int:2"},
		Variables: []Variable{{Path: "/score/output/weights", DType: "Float32", Dims: []int{2, 2}, Trainable: true}}},
		Values: []*tensors.Tensor{tensors.FromValue([][]float32{{1, 2}, {3, 4}})}}
	vp, _ := SpecOf(schedule.DefaultVP())
	c.Header.Provenance = &Provenance{Schedule: vp, Data: "fuzz", Scaling: "none", Dequantize: "none"}
	good, err := c.Encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add([]byte(checkpointMagic))
	f.Add([]byte{})
	f.Add(good[:len(good)-checksumLen])
	f.Fuzz(func(t *testing.T, in []byte) {
		sum := sha256.Sum256(in)
		for _, raw := range [][]byte{in, append(slices.Clone(in), sum[:]...)} {
			c, err := Decode(raw, "fuzz")
			if err != nil {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("error does not wrap ErrInvalid: %v", err)
				}
				continue
			}
			if c.Header.Provenance == nil { // a v2 file: decoded to be shown or re-stamped, never re-encoded as is
				continue
			}
			again, err := c.Encode()
			if err != nil {
				t.Fatal(err)
			}
			back, err := Decode(again, "re-encoded")
			if err != nil {
				t.Fatalf("re-encoded checkpoint does not decode: %v", err)
			}
			if !reflect.DeepEqual(back.Header, c.Header) || len(back.Values) != len(c.Values) {
				t.Fatal("re-encoded checkpoint decodes to another header")
			}
			for i := range c.Values {
				var a, b []byte
				_ = c.Values[i].ConstBytes(func(x []byte) { a = bytes.Clone(x) })
				_ = back.Values[i].ConstBytes(func(x []byte) { b = bytes.Clone(x) })
				if !bytes.Equal(a, b) {
					t.Fatalf("variable %d changed in the round trip", i)
				}
			}
		}
	})
}

// TestInferenceCopiesAreNeverWritten: the layouts an inference graph
// derives from a store's weights (models.IsInferenceCopy) stay out of its
// checkpoint and its network digest, which are what they were before the
// copy was made.
func TestInferenceCopiesAreNeverWritten(t *testing.T) {
	store := model.NewStore()
	store.RootScope().At(models.ScoreScope).VariableWithValue("w", tensors.FromValue([]float32{1, 2}))
	before, err := NetworkDigest(store, models.ScoreScope)
	if err != nil {
		t.Fatal(err)
	}
	store.RootScope().At(models.InferenceCopyScope).VariableWithValue("w_t", tensors.FromValue([]float32{1, 2})).SetTrainable(false)
	c, err := Of(store, KindWeights, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Header.Variables) != 1 || c.Header.Variables[0].Path != "/"+models.ScoreScope+"/w" {
		t.Errorf("checkpoint variables %v, want only /%s/w", c.Header.Variables, models.ScoreScope)
	}
	if after, err := NetworkDigest(store, models.ScoreScope); err != nil || after != before {
		t.Errorf("network digest %s (%v) after an inference copy, %s before", after, err, before)
	}
}
