// Package onnxtest gives the tests of the studies the committed PyTorch
// fixtures (models/testdata/onnx, made by scripts/onnx-fixtures.py)
// imported as networks, each on a Go backend of its own.
package onnxtest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/gomlx/compute/gobackend"

	"github.com/dfx-lab/dfx/dfx/access"
	"github.com/dfx-lab/dfx/dfx/schedule"
	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/models/onnximport"
)

// Fixture reads the committed fixture name.onnx.
func Fixture(t testing.TB, name string) []byte {
	t.Helper()
	_, here, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("onnxtest: cannot locate the fixtures")
	}
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "..", "testdata", "onnx", name+".onnx"))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// MLP is the MLP ε-network fixture (d = 8) imported on schedule s, its
// time input σ.
func MLP(t testing.TB, s schedule.Schedule) *onnximport.Imported {
	t.Helper()
	im, err := onnximport.Import(Fixture(t, "mlp"), onnximport.Options{Param: "eps", Schedule: s, Time: models.TimeSigma, TimeScale: 1})
	if err != nil {
		t.Fatal(err)
	}
	return im
}

// Net is im as a network on a Go backend that lives as long as the test.
func Net(t testing.TB, im *onnximport.Imported) *access.Net {
	t.Helper()
	backend, err := gobackend.New(models.GoBackendOptions)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(backend.Finalize)
	net, err := im.Net(backend)
	if err != nil {
		t.Fatal(err)
	}
	return net
}
