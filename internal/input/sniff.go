package input

import (
	"io"
	"path/filepath"
	"strings"
)

// IsIDX reports whether path is read as IDX images: a .gz file, a name
// IDX files carry (.idx, -ubyte), or a file whose first two bytes are 0, as
// every IDX magic's are (no CSV or .npy file starts so). One with another
// magic than the images' 0x00000803 (a label file, say) is then refused by
// mnist.ReadImages, instead of being read as CSV.
func IsIDX(path string) bool {
	if path == "-" {
		return false
	}
	if name := strings.ToLower(filepath.Base(path)); strings.HasSuffix(name, ".gz") || strings.HasSuffix(name, ".idx") || strings.HasSuffix(name, "-ubyte") {
		return true
	}
	f, err := Open(path)
	if err != nil {
		return false // ReadFile reports it
	}
	defer f.Close()
	var magic [2]byte
	n, _ := io.ReadFull(f, magic[:])
	return n == 2 && magic == [2]byte{0, 0}
}

// IsNPY reports whether path is a .npy file (by its name or its magic bytes).
func IsNPY(path string) bool {
	if strings.HasSuffix(strings.ToLower(path), ".npy") {
		return true
	}
	if path == "-" {
		return false
	}
	f, err := Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [6]byte
	n, _ := io.ReadFull(f, magic[:])
	return n == 6 && string(magic[:]) == "\x93NUMPY"
}
