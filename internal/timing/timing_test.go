package timing

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
)

func TestMedianOddEvenEmpty(t *testing.T) {
	for _, c := range []struct {
		v    []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		in := slices.Clone(c.v)
		if got := Median(c.v); got != c.want {
			t.Errorf("Median(%v) = %g, want %g", c.v, got, c.want)
		}
		if !slices.Equal(in, c.v) {
			t.Errorf("Median reordered its input: %v", c.v)
		}
	}
}

// TestInterleavedOrder checks the call order: one warm-up call of each case,
// then round by round, case after case, a capped case only in its first
// rounds; the warm-up values are dropped.
func TestInterleavedOrder(t *testing.T) {
	var calls []string
	n := map[string]float64{}
	mk := func(name string) func() ([]float64, error) {
		return func() ([]float64, error) {
			calls = append(calls, name)
			n[name]++
			return []float64{n[name], 10 * n[name]}, nil
		}
	}
	got, err := Interleaved(context.Background(), 3, []Case{{Name: "a", Run: mk("a")}, {Name: "b", Rounds: 1, Run: mk("b")}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a", "b", "a", "b", "a", "a"}; !slices.Equal(calls, want) {
		t.Errorf("calls %v, want %v", calls, want)
	}
	if !slices.Equal(got[0].Values[0], []float64{2, 3, 4}) || !slices.Equal(got[0].Values[1], []float64{20, 30, 40}) {
		t.Errorf("a's values %v, want the three timed calls without the warm-up", got[0].Values)
	}
	if got[1].Rounds() != 1 || got[1].Median(0) != 2 {
		t.Errorf("b: %d rounds, median %g; want 1 round of value 2", got[1].Rounds(), got[1].Median(0))
	}
	if got[0].Median(1) != 30 || got[0].Quantile(0, 0) != 2 || got[0].Quantile(1, 0) != 4 {
		t.Errorf("a: median %g, quantiles %g %g", got[0].Median(1), got[0].Quantile(0, 0), got[0].Quantile(1, 0))
	}
	if !math.IsNaN(Samples{}.Quantile(0.5, 0)) || (Samples{}).Median(0) != 0 {
		t.Error("a case without rounds has median 0 and quantile NaN")
	}
}

func TestInterleavedStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	run := func() ([]float64, error) {
		calls++
		if calls == 3 {
			cancel()
		}
		return []float64{1}, nil
	}
	if _, err := Interleaved(ctx, 5, []Case{{Name: "a", Run: run}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if calls != 3 {
		t.Errorf("%d calls after cancel at the third, want 3", calls)
	}
	boom := errors.New("boom")
	_, err := Interleaved(context.Background(), 1, []Case{{Name: "x", Run: func() ([]float64, error) { return nil, boom }}})
	if !errors.Is(err, boom) || err.Error() != "x: boom" {
		t.Errorf("err %v, want x: boom", err)
	}
}

func TestWall(t *testing.T) {
	v, err := Wall(func() error { return nil })()
	if err != nil || len(v) != 1 || v[0] < 0 {
		t.Errorf("Wall: %v, %v", v, err)
	}
	if _, err := Wall(func() error { return errors.New("no") })(); err == nil {
		t.Error("Wall dropped the error")
	}
}
