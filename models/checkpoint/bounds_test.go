package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dfx-lab/dfx/models"
)

// toyCheckpoint is a committed toy ε-network's checkpoint file.
const toyCheckpoint = "../../toys/checkpoints/moons-n5000-d1-ve-score-w64x3-s3000-seed1.dfxckpt"

// TestForgedSizesAreRefusedBeforeAnyGraphIsBuilt: a checksum-valid file
// whose header claims a depth of 10 000 blocks, a width, class count or
// data dimension larger than any stored variable, or a network listed
// twice, is refused by the decoder at once, not after building the
// network's graph.
func TestForgedSizesAreRefusedBeforeAnyGraphIsBuilt(t *testing.T) {
	raw, err := os.ReadFile(toyCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Decode(raw, "toy")
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(c); err != nil {
		t.Fatalf("the committed checkpoint does not verify: %v", err)
	}
	cases := map[string]func(c *Checkpoint){
		"depth 10 000":     func(c *Checkpoint) { c.Header.Params["/"+models.ParamDepth] = "int:10000" },
		"width 1e9":        func(c *Checkpoint) { c.Header.Params["/"+models.ParamWidth] = "int:1000000000" },
		"scoped width":     func(c *Checkpoint) { c.Header.Params["/score/"+models.ParamWidth] = "int:100000" },
		"negative depth":   func(c *Checkpoint) { c.Header.Params["/"+models.ParamDepth] = "int:-1" },
		"embed_dim 1e8":    func(c *Checkpoint) { c.Header.Params["/"+models.ParamEmbedDim] = "int:100000000" },
		"classes 1e6":      func(c *Checkpoint) { c.Header.Params["/"+models.ParamNumClasses] = "int:1000000" },
		"dim 1e9":          func(c *Checkpoint) { c.Header.Dim = 1000000000 },
		"network twice":    func(c *Checkpoint) { c.Header.Networks = append(c.Header.Networks, c.Header.Networks[0]) },
		"embed_width 1e12": func(c *Checkpoint) { c.Header.Params["/"+models.ParamEmbedWidth] = "int:1000000000000" },
	}
	for name, mutate := range cases {
		forged := forge(t, raw, mutate)
		start := time.Now()
		d, err := Decode(forged, name)
		if err == nil {
			err = Verify(d)
		}
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
		if el := time.Since(start); el > 5*time.Second {
			t.Errorf("%s: refused after %v", name, el)
		}
	}
}

// TestReadChecksTheSizeBeforeReading: a file whose header length
// exceeds its size, or that is not a checkpoint, is refused from its first
// bytes; a file that is a checkpoint reads back.
func TestReadChecksTheSizeBeforeReading(t *testing.T) {
	raw, err := os.ReadFile(toyCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	long := slices.Clone(raw)
	binary.LittleEndian.PutUint32(long[len(checkpointMagic)+4:], uint32(len(raw)))
	for name, b := range map[string][]byte{"long header": long, "text": bytes.Repeat([]byte("not a checkpoint\n"), 10)} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(p); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: got %v, want ErrInvalid naming the file", name, err)
		}
	}
	if _, err := Read(toyCheckpoint); err != nil {
		t.Fatal(err)
	}
}

// TestReadReadsAForeignFileOnlyToItsMagic: a large file that is
// not a checkpoint (here 256 MiB, sparse) is refused from its first bytes,
// not read whole first.
func TestReadReadsAForeignFileOnlyToItsMagic(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.dfxckpt")
	if err := os.WriteFile(p, []byte("not a checkpoint"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, 256<<20); err != nil {
		t.Skipf("no sparse file here: %v", err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Read(p)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("got %v, want ErrInvalid", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("refusing it allocated %d bytes", got)
	}
}

// FuzzVerify: a committed toy checkpoint with a fuzzed JSON
// header (and a valid checksum, so that the header's checks are reached)
// never panics, every error wraps ErrInvalid, and whatever decodes
// verifies or is refused within seconds, whatever sizes the header claims.
func FuzzVerify(f *testing.F) {
	raw, err := os.ReadFile(toyCheckpoint)
	if err != nil {
		f.Fatal(err)
	}
	const fixed = len(checkpointMagic) + 8
	hlen := int(binary.LittleEndian.Uint32(raw[len(checkpointMagic)+4:]))
	hdr, data := raw[fixed:fixed+hlen], raw[fixed+hlen:len(raw)-checksumLen]
	f.Add(slices.Clone(hdr))
	for _, r := range [][2]string{{`"int:3"`, `"int:10000"`}, {`"Networks":["score"]`, `"Networks":["score","score"]`}, {`"Dim":2`, `"Dim":2000000000`}} {
		f.Add(bytes.Replace(hdr, []byte(r[0]), []byte(r[1]), 1))
	}
	f.Fuzz(func(t *testing.T, h []byte) {
		var file bytes.Buffer
		file.Write(raw[:len(checkpointMagic)+4])
		_ = binary.Write(&file, binary.LittleEndian, uint32(len(h)))
		file.Write(h)
		file.Write(data)
		sum := sha256.Sum256(file.Bytes())
		file.Write(sum[:])
		// A hang is a crash with every goroutine's stack, not a stalled fuzzer.
		watchdog := time.AfterFunc(20*time.Second, func() { panic("decoding and verifying a checkpoint took over 20 s") })
		defer watchdog.Stop()
		c, err := Decode(file.Bytes(), "fuzz")
		if err == nil {
			err = Verify(c)
		}
		if err != nil && !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrNoProvenance) {
			t.Fatalf("error wraps neither ErrInvalid nor ErrNoProvenance: %v", err)
		}
	})
}
