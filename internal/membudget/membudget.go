// Package membudget decides, before allocating, whether a request fits in
// memory: commands estimate what a request needs and refuse, with the
// figure, what exceeds the budget instead of dying with "out of memory".
package membudget

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// Available is the memory the kernel says can be allocated without
// swapping (MemAvailable in /proc/meminfo), in bytes; 0 if unknown.
func Available() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemAvailable:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil || kb <= 0 {
				return 0
			}
			return kb * 1024
		}
	}
	return 0
}

// Budget is a limit in bytes and where it came from.
type Budget struct {
	Bytes  int64
	Source string // "--max-memory" or "MemAvailable"
}

// FromFlag returns the budget a --max-memory value sets ("" or "auto": 90 %
// of MemAvailable; unknown MemAvailable: no limit, Bytes 0).
func FromFlag(s string) (Budget, error) {
	if s == "" || s == "auto" {
		a := Available()
		return Budget{Bytes: a / 10 * 9, Source: "90% of MemAvailable"}, nil
	}
	n, err := ParseBytes(s)
	if err != nil {
		return Budget{}, fmt.Errorf("--max-memory: %w", err)
	}
	return Budget{Bytes: n, Source: "--max-memory"}, nil
}

// ParseBytes reads a size: a number of at least one byte with an optional
// unit B, K, M, G, T (powers of 1024; KB/KiB/… accepted).
func ParseBytes(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	mult := 1.0
	if t != "" {
		if i := strings.IndexByte("KMGT", t[len(t)-1]); i >= 0 {
			mult = math.Pow(1024, float64(i+1))
			t = t[:len(t)-1]
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || !(v*mult >= 1) || math.IsInf(v, 0) || v*mult >= math.MaxInt64 {
		return 0, fmt.Errorf("%q is not a positive size (e.g. 512M, 8G)", s)
	}
	return int64(v * mult), nil
}

// Check refuses need bytes for what when they exceed the budget; hint, if
// not empty, says what to do instead.
func (b Budget) Check(what string, need float64, hint string) error {
	if b.Bytes <= 0 || need <= float64(b.Bytes) {
		return nil
	}
	msg := fmt.Sprintf("%s needs about %s, more than the memory budget %s (%s)", what, Format(need), Format(float64(b.Bytes)), b.Source)
	if hint != "" {
		msg += "; " + hint
	}
	return fmt.Errorf("%s", msg)
}

// Format writes n bytes in binary units.
func Format(n float64) string {
	if math.IsInf(n, 0) || n > 1<<70 {
		return "more than 1 ZiB"
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%.0f B", n)
	}
	i := -1
	for n >= unit && i < 5 {
		n /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", n, "KMGTPE"[i])
}
