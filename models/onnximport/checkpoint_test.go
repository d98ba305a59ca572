package onnximport

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/gomlx/compute/gobackend"
	"gonum.org/v1/gonum/mat"

	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/models/checkpoint"
)

func TestImportedCheckpointRoundTripsAndRecordsItsSource(t *testing.T) {
	raw, f := readFixture(t, "unet")
	im, err := Import(raw, unetOptions)
	if err != nil {
		t.Fatal(err)
	}
	c, err := im.Checkpoint("unet.onnx")
	if err != nil {
		t.Fatal(err)
	}
	enc, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := checkpoint.Decode(enc, "unet.dfxckpt")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.Verify(back); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	p := back.Header.Provenance
	if p.ONNX != hex.EncodeToString(sum[:]) || p.Param != "v" || p.Schedule.Name != "vp" || back.Header.Dim != 64 {
		t.Errorf("provenance %+v, dim %d: want the file's SHA-256, v, vp and d = 64", p, back.Header.Dim)
	}
	if err := checkpoint.CheckSchedule(back, schedule.DefaultVP()); err != nil {
		t.Error(err)
	}
	store, err := checkpoint.LoadWeights(back)
	if err != nil {
		t.Fatal(err)
	}
	backend, err := gobackend.New(models.GoBackendOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Finalize()
	loaded, err := models.NewAccessNet(backend, store, schedule.DefaultVP(), false)
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := im.Net(backend)
	if err != nil {
		t.Fatal(err)
	}
	c0, _ := schedule.At(im.Schedule, f.T[2])
	x := mat.NewDense(1, 64, f.X[2])
	a, err := loaded.EpsAt(c0, x)
	if err != nil {
		t.Fatal(err)
	}
	b, err := fresh.EpsAt(c0, x)
	if err != nil {
		t.Fatal(err)
	}
	if !mat.Equal(a, b) {
		t.Error("the network loaded from its checkpoint computes another ε than the imported one")
	}
}

func TestImportedCheckpointIsStrict(t *testing.T) {
	raw, _ := readFixture(t, "mlp")
	im, err := Import(raw, mlpOptions)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(c *checkpoint.Checkpoint)
	}{
		{"no ONNX digest", func(c *checkpoint.Checkpoint) { c.Header.Provenance.ONNX = "" }},
		{"a variable missing", func(c *checkpoint.Checkpoint) {
			c.Header.Variables, c.Values = c.Header.Variables[1:], c.Values[1:]
		}},
		{"another layout", func(c *checkpoint.Checkpoint) { c.Header.Dim = 9 }},
		{"a spec field unknown", func(c *checkpoint.Checkpoint) {
			k := "/" + models.ScoreScope + "/" + models.ParamONNX
			c.Header.Params[k] = c.Header.Params[k][:len(c.Header.Params[k])-1] + `,"Extra":1}`
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := im.Checkpoint("mlp.onnx")
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(c)
			enc, err := c.Encode()
			if err != nil {
				return // refused on writing already
			}
			back, err := checkpoint.Decode(enc, "x.dfxckpt")
			if err == nil {
				err = checkpoint.Verify(back)
			}
			if !errors.Is(err, checkpoint.ErrInvalid) {
				t.Errorf("loaded (error %v)", err)
			}
		})
	}
}
