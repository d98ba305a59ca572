package models

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dfx-lab/dfx/dfx/schedule"
)

func newTinyTrainer(t *testing.T, width int) *Trainer {
	t.Helper()
	data, labels := tinyData(64, 3)
	ctx := tinyStore()
	ctx.SetParams(map[string]any{ParamWidth: width, ParamNumClasses: 4})
	tr, err := NewTrainer(MustNewTrainBackend(), ctx, schedule.DefaultVP(), DSM, data, labels)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestCheckpointResumesExactly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ckpt.dfx")
	a := newTinyTrainer(t, 16)
	if _, err := a.TrainSteps(7); err != nil {
		t.Fatal(err)
	}
	if err := a.Save(path); err != nil {
		t.Fatal(err)
	}
	if _, err := a.TrainSteps(5); err != nil {
		t.Fatal(err)
	}
	b := newTinyTrainer(t, 16)
	if err := b.Load(path); err != nil {
		t.Fatal(err)
	}
	if b.Step() != 7 {
		t.Fatalf("step %d after load, want 7", b.Step())
	}
	if _, err := b.TrainSteps(5); err != nil {
		t.Fatal(err)
	}
	wa, wb := weights(t, a.Store), weights(t, b.Store)
	if len(wa) != len(wb) {
		t.Fatalf("%d variables vs %d", len(wa), len(wb))
	}
	for k, v := range wa {
		if !slices.Equal(v, wb[k]) {
			t.Fatalf("variable %s differs after save/load/resume", k)
		}
	}
}

func TestCheckpointRejectsCorruptTruncatedAndMismatchedFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ckpt.dfx")
	a := newTinyTrainer(t, 16)
	if _, err := a.TrainSteps(2); err != nil {
		t.Fatal(err)
	}
	if err := a.Save(path); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flipped := slices.Clone(raw)
	flipped[len(flipped)/2] ^= 0x40
	// A huge header length with a recomputed, valid CRC: the bound must catch it.
	huge := slices.Clone(raw)
	binary.LittleEndian.PutUint32(huge[12:], 0xfffffff0)
	binary.LittleEndian.PutUint32(huge[len(huge)-4:], crc32.ChecksumIEEE(huge[:len(huge)-4]))
	cases := map[string]string{
		"flipped byte":   write("flip", flipped),
		"truncated":      write("trunc", raw[:len(raw)-100]),
		"not checkpoint": write("junk", []byte("hello world, this is not a checkpoint")),
		"huge header":    write("huge", huge),
	}
	for name, p := range cases {
		if err := newTinyTrainer(t, 16).Load(p); !errors.Is(err, ErrCheckpoint) {
			t.Errorf("%s: got %v, want ErrCheckpoint", name, err)
		}
	}
	if err := newTinyTrainer(t, 32).Load(path); !errors.Is(err, ErrCheckpoint) {
		t.Errorf("width mismatch: got %v, want ErrCheckpoint", err)
	} else {
		t.Logf("mismatch message: %v", err)
	}
}
