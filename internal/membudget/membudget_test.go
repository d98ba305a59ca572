package membudget

import (
	"strings"
	"testing"
)

func TestParseBytesAcceptsUnitsAndRejectsNonsense(t *testing.T) {
	for s, want := range map[string]int64{"100": 100, "1K": 1024, "512M": 512 << 20, "8G": 8 << 30, "1.5GiB": 3 << 29, "2kb": 2048} {
		if got, err := ParseBytes(s); err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "0", "-1G", "lots", "NaNG", "InfG", "1e30T"} {
		if _, err := ParseBytes(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

func TestCheckNamesTheFigureTheBudgetAndTheHint(t *testing.T) {
	b := Budget{Bytes: 1 << 30, Source: "--max-memory"}
	if err := b.Check("x", 1<<29, ""); err != nil {
		t.Fatal(err)
	}
	err := b.Check("x", 3<<30, "use less")
	if err == nil || !strings.Contains(err.Error(), "3.0 GiB, more than the memory budget 1.0 GiB (--max-memory); use less") {
		t.Fatalf("got %v", err)
	}
	if Available() < 0 {
		t.Fatal("negative MemAvailable")
	}
}
