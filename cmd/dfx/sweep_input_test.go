//go:build unix

package main

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dfx-lab/dfx/models"
	"github.com/dfx-lab/dfx/models/checkpoint"
)

// toyScore is a committed toy ε-network (d = 2) the input cases read.
const toyScore = "../../toys/checkpoints/checkerboard-n5000-d1-ve-score-w64x3-s8000-seed1.dfxckpt"

// mkfifo makes a named pipe that nothing writes to.
func mkfifo(t *testing.T, path string) string {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A refusal takes milliseconds; the regressions these tests guard against
// took minutes (a forged deep header) or for ever (a pipe without a writer).
// Both bounds leave a loaded machine two orders of magnitude of room.
const (
	refusalLimit   = 30 * time.Second
	inputHangLimit = 3 * time.Minute
)

// runBounded runs the CLI in process and fails the test if it has not
// returned within limit — a regression that blocks on a named pipe fails
// instead of hanging the suite: the pipes are then opened for writing and
// closed, which releases a reader blocked on them.
func runBounded(t *testing.T, limit time.Duration, fifos []string, args ...string) (code int, stdout, stderr string, took time.Duration) {
	t.Helper()
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		c, o, e := runCLI(args...)
		done <- result{c, o, e}
	}()
	select {
	case r := <-done:
		return r.code, r.out, r.err, time.Since(start)
	case <-time.After(limit):
	}
	release := time.Now().Add(10 * time.Second)
	for len(fifos) > 0 && time.Now().Before(release) {
		for _, p := range fifos {
			if fd, err := syscall.Open(p, syscall.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				syscall.Close(fd)
			}
		}
		select {
		case <-done:
			release = time.Time{}
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("%v: still running after %v (blocked on an input?)", args, limit)
	return
}

// forgeCheckpoint writes the toy checkpoint re-encoded (valid checksum)
// after mutate.
func forgeCheckpoint(t *testing.T, path string, mutate func(c *checkpoint.Checkpoint)) string {
	t.Helper()
	c, err := checkpoint.Read(toyScore)
	if err != nil {
		t.Fatal(err)
	}
	mutate(c)
	raw, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// idxBytes is an uncompressed IDX stream.
func idxBytes(magic uint32, dims []uint32, data []byte) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, magic)
	binary.Write(&b, binary.BigEndian, dims)
	b.Write(data)
	return b.Bytes()
}

// gzipped compresses raw; corrupt flips a bit of its CRC-32 trailer.
func gzipped(raw []byte, corrupt bool) []byte {
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	w.Write(raw)
	w.Close()
	b := z.Bytes()
	if corrupt {
		b[len(b)-8] ^= 1
	}
	return b
}

// inputCase is one refused input: exit 2, one line on stderr saying want,
// nothing on stdout, within 5 s unless slow.
type inputCase struct {
	name string
	args []string
	env  []string // KEY=VALUE
	want string
	slow bool
}

// checkRefused runs each case; pipes are released if a case blocks.
func checkRefused(t *testing.T, pipes []string, cases []inputCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, kv := range c.env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			code, out, errOut, took := runBounded(t, inputHangLimit, pipes, c.args...)
			if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.HasSuffix(errOut, "\n") {
				t.Fatalf("%v: exit %d, stdout %q, stderr %q; want 2, nothing, one line", c.args, code, clipOut(out), errOut)
			}
			if !strings.Contains(errOut, c.want) {
				t.Errorf("%v: stderr %q does not say %q", c.args, errOut, c.want)
			}
			if !c.slow && took > refusalLimit {
				t.Errorf("%v: refused after %v, want within %v", c.args, took, refusalLimit)
			}
		})
	}
}

// writeIn writes content to dir/name.
func writeIn(t *testing.T, dir, name string, content []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestNoInputIsAPipeOrADevice: each kind of file dfx reads — checkpoints
// (ckpt, nll, --gmm, -nets, the training state), GMM JSON, CSV/IDX points,
// the -reference image, the MNIST folder — is refused at once when it is a
// named pipe without a writer, a device or a folder, naming what it is.
func TestNoInputIsAPipeOrADevice(t *testing.T) {
	dir := t.TempDir()
	var pipes []string
	fifo := func(path string) string {
		pipes = append(pipes, mkfifo(t, path))
		return path
	}
	in := func(name string) string { return fifo(filepath.Join(dir, name)) }
	x := writeIn(t, dir, "x.csv", []byte("0.3,0.4\n"))
	gmm := writeIn(t, dir, "g.json", []byte(`{"means":[[0,0]],"covs":[[[1,0],[0,1]]]}`))
	png := filepath.Join(dir, "s.png")
	sp := []string{"sample", "-class", "3", "-n", "1", "-steps", "1", "-png", png}
	state := filepath.Join(dir, "state")
	os.Mkdir(state, 0o755)
	fifo(filepath.Join(state, "_eps.state.dfxckpt"))
	nets := copyNets(t, "", nil)
	os.Remove(filepath.Join(nets, "eps.dfxckpt"))
	fifo(filepath.Join(nets, "eps.dfxckpt"))
	data := mnistDir(t, 28, 2, 2, 0, false)
	os.Remove(filepath.Join(data, "train-images-idx3-ubyte.gz"))
	fifo(filepath.Join(data, "train-images-idx3-ubyte.gz"))
	const pipe, dev = "named pipe", "character device"
	checkRefused(t, pipes, []inputCase{
		{"ckpt fifo", []string{"ckpt", in("c1")}, nil, pipe, false},
		{"nll gmm fifo", []string{"nll", "--gmm", in("g1"), "--points", x, "--schedule", "vp"}, nil, pipe, false},
		{"nll gmm checkpoint fifo", []string{"nll", "--gmm", in("g2.dfxckpt"), "--points", x, "--schedule", "vp"}, nil, pipe, false},
		{"nll checkpoint fifo", []string{"nll", "--checkpoint", in("c2"), "--points", x, "--schedule", "ve"}, nil, pipe, false},
		{"nll points fifo", []string{"nll", "--gmm", gmm, "--points", in("p1"), "--schedule", "vp"}, nil, pipe, false},
		{"nll points fifo.gz", []string{"nll", "--gmm", gmm, "--points", in("p2.gz"), "--schedule", "vp"}, nil, pipe, false},
		{"analytic data fifo", []string{"analytic", "--data", in("d1"), "--points", x, "--schedule", "ve", "--t", "0.5"}, nil, pipe, false},
		{"sample reference fifo", cat(sp, "-steps", "10", "-guide", "style", "-reference", in("r1")), nil, pipe, false},
		{"train resume state fifo", []string{"train", "eps", "-resume", "-out", state}, nil, pipe, false},
		{"sample nets fifo", cat(sp, "-nets", nets), nil, pipe, false},
		{"mnist dir fifo", []string{"train", "classifier", "-steps", "1", "-out", filepath.Join(dir, "out")}, []string{"DFX_MNIST_DIR=" + data}, pipe, true},
		{"ckpt /dev/urandom", []string{"ckpt", "/dev/urandom"}, nil, dev, false},
		{"ckpt /dev/zero", []string{"ckpt", "/dev/zero"}, nil, dev, false},
		{"nll checkpoint /dev/zero", []string{"nll", "--checkpoint", "/dev/zero", "--points", x, "--schedule", "ve"}, nil, dev, false},
		{"ckpt a folder", []string{"ckpt", dir}, nil, "is a folder", false},
	})
	if _, err := os.Stat(png); err == nil {
		t.Errorf("a refused run wrote %s", png)
	}
}

// TestForgedOrMalformedInputsAreRefused: a checksum-valid checkpoint whose
// header claims a depth of 10 000 is refused before any graph is built, as
// is one listing its network twice; CSV takes only plain decimals; a gzip
// stream's CRC is verified; an IDX file with another magic is not read as
// CSV.
func TestForgedOrMalformedInputsAreRefused(t *testing.T) {
	dir := t.TempDir()
	x := writeIn(t, dir, "x.csv", []byte("0.3,0.4\n"))
	gmm := writeIn(t, dir, "g.json", []byte(`{"means":[[0,0]],"covs":[[[1,0],[0,1]]]}`))
	deep := forgeCheckpoint(t, filepath.Join(dir, "deep.dfxckpt"), func(c *checkpoint.Checkpoint) { c.Header.Params["/"+models.ParamDepth] = "int:10000" })
	twice := forgeCheckpoint(t, filepath.Join(dir, "twice.dfxckpt"), func(c *checkpoint.Checkpoint) {
		c.Header.Networks = append(c.Header.Networks, c.Header.Networks[0])
	})
	// Enough pixels that gzip delivers the last of them before it reaches
	// the trailer: only reading on to the end checks the CRC.
	pixels := make([]byte, 2*20000)
	for i := range pixels {
		pixels[i] = byte(i * 7919 >> 3)
	}
	badGz := writeIn(t, dir, "bad.gz", gzipped(idxBytes(0x803, []uint32{20000, 1, 2}, pixels), true))
	labels := writeIn(t, dir, "l.idx", idxBytes(0x801, []uint32{1}, []byte{3}))
	unnamed := writeIn(t, dir, "points", idxBytes(0x802, []uint32{1, 1, 2}, []byte{1, 2}))
	nll := func(points string) []string {
		return []string{"nll", "--gmm", gmm, "--points", points, "--schedule", "vp", "--solver", "euler", "--steps", "2"}
	}
	checkRefused(t, nil, []inputCase{
		{"ckpt depth 10 000", []string{"ckpt", deep}, nil, "depth = 10000", false},
		{"nll depth 10 000", []string{"nll", "--checkpoint", deep, "--points", x, "--schedule", "ve"}, nil, "depth = 10000", false},
		{"ckpt network twice", []string{"ckpt", twice}, nil, "listed twice", false},
		{"csv underscore", []string{"analytic", "--data", writeIn(t, dir, "u.csv", []byte("1_0,0\n0,0\n")), "--points", x, "--schedule", "ve", "--t", "0.5"}, nil,
			`"1_0" is not a number`, false},
		{"csv hex float", nll(writeIn(t, dir, "h.csv", []byte("0x1p-2,0\n"))), nil, `"0x1p-2" is not a number`, false},
		{"gz bad crc", nll(badGz), nil, "checksum", false},
		{"idx label magic", nll(labels), nil, "magic 0x00000801, want 0x00000803 (IDX images)", false},
		{"idx magic, no idx name", nll(unnamed), nil, "magic 0x00000802", false},
	})
}

// clipOut shortens a command's output for a failure message.
func clipOut(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// TestValidInputsNextToTheRefusedOnesAreRead: what the refusals above
// must not catch — a symbolic link to a checkpoint, the same IDX points
// with a good CRC, and mixture weights of 1e308 each (only their ratio
// matters) — is read.
func TestValidInputsNextToTheRefusedOnesAreRead(t *testing.T) {
	dir := t.TempDir()
	file := func(name string, content []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	abs, _ := filepath.Abs(toyScore)
	link := filepath.Join(dir, "link.dfxckpt")
	if err := os.Symlink(abs, link); err != nil {
		t.Fatal(err)
	}
	gmm := file("g.json", []byte(`{"means":[[0,0]],"covs":[[[1,0],[0,1]]]}`))
	huge := file("huge.json", []byte(`{"weights":[1e308,1e308],"means":[[0,0],[1,1]],"covs":[[[1,0],[0,1]],[[1,0],[0,1]]]}`))
	good := file("good.gz", gzipped(idxBytes(0x803, []uint32{1, 1, 2}, []byte{10, 200}), false))
	x := file("x.csv", []byte("0.3,-4e-1\n"))
	for _, args := range [][]string{
		{"ckpt", link},
		{"nll", "--gmm", gmm, "--points", good, "--schedule", "vp", "--solver", "euler", "--steps", "4"},
		{"nll", "--gmm", huge, "--points", x, "--schedule", "vp", "--solver", "euler", "--steps", "4"},
	} {
		code, out, errOut, _ := runBounded(t, inputHangLimit, nil, args...)
		if code != 0 || out == "" {
			t.Errorf("%v: exit %d, stderr %q; want it read", args, code, errOut)
		}
	}
}
