package report

import (
	"context"
	"strings"
	"testing"
)

type named string

func (n named) Report() (*Report, error) { return &Report{Name: string(n)}, nil }

func TestRegistryLooksUpListsInOrderAndRefusesDuplicates(t *testing.T) {
	var got Config
	run := func(_ context.Context, c Config) ([]Result, error) { got = c; return One(named("r"), nil) }
	Register(Experiment{Name: "zz-test-b", Doc: "b", Run: run})
	Register(Experiment{Name: "zz-test-a", Doc: "a", Standalone: true, Run: run})
	e, ok := Lookup("zz-test-a")
	if !ok || e.Doc != "a" || !e.Standalone {
		t.Fatalf("Lookup(zz-test-a) = %+v, %v", e, ok)
	}
	if _, ok := Lookup("zz-test-none"); ok {
		t.Error("Lookup found an experiment never registered")
	}
	var order []string
	for _, e := range Experiments() {
		if strings.HasPrefix(e.Name, "zz-test-") {
			order = append(order, e.Name)
		}
	}
	if strings.Join(order, ",") != "zz-test-a,zz-test-b" {
		t.Errorf("Experiments order %v, want by name", order)
	}
	rs, err := e.Run(context.Background(), Config{Profile: Quick, Settings: Settings{NetsDir: "n"}})
	if err != nil || len(rs) != 1 || got.Profile != Quick || got.Settings.NetsDir != "n" {
		t.Errorf("Run passed %+v, returned %v, %v", got, rs, err)
	}
	if got.LogWriter() == nil {
		t.Error("LogWriter of a nil Log is nil")
	}
	for _, bad := range []Experiment{{Name: "zz-test-a", Run: run}, {Name: "", Run: run}, {Name: "zz-test-c"}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q, run %v) did not panic", bad.Name, bad.Run != nil)
				}
			}()
			Register(bad)
		}()
	}
}

func TestParseProfile(t *testing.T) {
	for s, want := range map[string]Profile{"full": Full, "quick": Quick} {
		if p, err := ParseProfile(s); err != nil || p != want {
			t.Errorf("ParseProfile(%q) = %q, %v", s, p, err)
		}
	}
	for _, s := range []string{"", "Quick", "fast"} {
		if _, err := ParseProfile(s); err == nil {
			t.Errorf("ParseProfile(%q) accepted", s)
		}
	}
}
