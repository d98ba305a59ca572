package membudget

import "testing"

// FuzzParseBytes: no --max-memory value panics; a size that parses is at
// least one byte (0 would mean "no limit").
func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"512M", "8G", "1", "0", "-1", "0.1", "1e30T", "NaN", "Inf", "kib", "1.5KiB", " 2 g ", "B", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseBytes(s)
		if err == nil && n < 1 {
			t.Fatalf("%q parsed to %d bytes", s, n)
		}
	})
}
