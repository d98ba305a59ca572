package outfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"strings"

	"github.com/dfx-lab/dfx/internal/input"
)

// Software is the value of the PNG "Software" text chunk that marks an
// image as written by dfx (MarkPNG, PNGOwned).
const Software = "dfx"

// pngSignature starts every PNG file.
const pngSignature = "\x89PNG\r\n\x1a\n"

// MarkPNG returns the PNG raw with a tEXt chunk Software=dfx after its
// header chunk: standard metadata that every viewer ignores, by which
// PNGOwned knows the file is dfx's.
func MarkPNG(raw []byte) ([]byte, error) {
	const ihdrEnd = len(pngSignature) + 8 + 13 + 4 // length, type, 13 bytes of IHDR, CRC
	if len(raw) < ihdrEnd || string(raw[:len(pngSignature)]) != pngSignature || string(raw[12:16]) != "IHDR" {
		return nil, errors.New("outfile: not a PNG image")
	}
	body := append([]byte("tEXt"), append([]byte("Software\x00"), Software...)...)
	var chunk bytes.Buffer
	_ = binary.Write(&chunk, binary.BigEndian, uint32(len(body)-4))
	chunk.Write(body)
	_ = binary.Write(&chunk, binary.BigEndian, crc32.ChecksumIEEE(body))
	out := make([]byte, 0, len(raw)+chunk.Len())
	out = append(out, raw[:ihdrEnd]...)
	out = append(out, chunk.Bytes()...)
	return append(out, raw[ihdrEnd:]...), nil
}

// PNGOwned is the Owned of a PNG image: nil when its chunks before the
// image data hold dfx's Software text (MarkPNG). It reads at most the
// first 64 KiB.
func PNGOwned(path string) error {
	head, err := readHead(path, 64<<10)
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(head, []byte(pngSignature)) {
		return errors.New("not a PNG image")
	}
	for p := len(pngSignature); p+8 <= len(head); {
		n := int(binary.BigEndian.Uint32(head[p:]))
		typ := string(head[p+4 : p+8])
		if typ == "IDAT" || n < 0 || p+12+n > len(head) {
			break
		}
		if typ == "tEXt" && string(head[p+8:p+8+n]) == "Software\x00"+Software {
			return nil
		}
		p += 12 + n
	}
	return errors.New("a PNG image without dfx's mark")
}

// NPYOwned is the Owned of a .npy array: nil when its header carries
// input.NPYMarker. It reads at most the first 64 KiB.
func NPYOwned(path string) error {
	head, err := readHead(path, 64<<10)
	if err != nil {
		return err
	}
	const magic = "\x93NUMPY"
	if len(head) < 10 || string(head[:6]) != magic {
		return errors.New("not a .npy array")
	}
	n, start := int(binary.LittleEndian.Uint16(head[8:])), 10
	if head[6] >= 2 && len(head) >= 12 {
		n, start = int(binary.LittleEndian.Uint32(head[8:])), 12
	}
	if start+n > len(head) {
		return errors.New("a .npy array whose header is longer than dfx writes")
	}
	if !strings.Contains(string(head[start:start+n]), "} "+input.NPYMarker) {
		return errors.New("a .npy array without dfx's mark")
	}
	return nil
}

// readHead reads up to limit bytes from the start of the regular file path
// (input.Open: it never blocks on what is not one).
func readHead(path string, limit int64) ([]byte, error) {
	f, err := input.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}
