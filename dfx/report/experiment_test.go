package report

import (
	"context"
	"errors"
	"flag"
	"strings"
	"testing"
)

type named string

func (n named) Report() (*Report, error) { return &Report{Name: string(n)}, nil }

type knobs struct {
	Profile Profile
	Size    int
}

func TestRegistryLooksUpListsInOrderBindsKnobsAndRefusesDuplicates(t *testing.T) {
	var got knobs
	var gotEnv Env
	spec := func(name string, standalone bool) Spec[knobs] {
		return Spec[knobs]{
			Name: name, Doc: strings.TrimPrefix(name, "zz-test-"), Standalone: standalone,
			Quick: func() knobs { return knobs{Quick, 1} },
			Full:  func() knobs { return knobs{Full, 100} },
			Flags: func(fs *flag.FlagSet, c *knobs) { fs.IntVar(&c.Size, "size", c.Size, "size") },
			Check: func(c knobs, _ Env) error {
				if c.Size < 0 {
					return errors.New("negative size")
				}
				return nil
			},
			Run: func(_ context.Context, c knobs, env Env) (Result, error) {
				got, gotEnv = c, env
				return named("r"), nil
			},
		}
	}
	Register(spec("zz-test-b", false))
	Register(spec("zz-test-a", true))
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
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	j := e.Configure(Quick, fs)
	if err := fs.Parse([]string{"-size", "7"}); err != nil {
		t.Fatal(err)
	}
	if c := j.Config().(*knobs); c.Profile != Quick || c.Size != 7 {
		t.Errorf("the quick job's config after -size 7 is %+v", c)
	}
	if _, err := j.Run(context.Background(), Env{Nets: "n"}); err != nil || got.Size != 7 || gotEnv.Nets != "n" {
		t.Errorf("Run saw %+v in %+v, %v", got, gotEnv, err)
	}
	if c := e.Configure(Full, nil).Config().(*knobs); c.Size != 100 {
		t.Errorf("the full job's config is %+v, want size 100", c)
	}
	*j.Config().(*knobs) = knobs{Size: -1}
	if j.Check(Env{}) == nil {
		t.Error("Check passed a negative size")
	}
	if (Env{}).LogWriter() == nil {
		t.Error("LogWriter of a nil Log is nil")
	}
	for _, bad := range []Spec[knobs]{spec("zz-test-a", false), spec("", false), {Name: "zz-test-c", Quick: spec("", false).Quick}} {
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

func TestPartsSplitIntoTheirResults(t *testing.T) {
	ps := Parts{named("a"), named("b")}
	if rs := Split(ps); len(rs) != 2 {
		t.Errorf("Split(two parts) has %d results", len(rs))
	}
	if rs := Split(named("a")); len(rs) != 1 {
		t.Errorf("Split(one result) has %d results", len(rs))
	}
	if r, err := ps.Report(); err != nil || r.Name != "a" {
		t.Errorf("Parts.Report() = %v, %v", r, err)
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

type pointerResult struct{}

func (*pointerResult) Report() (*Report, error) { return &Report{}, nil }

func TestAsResultIsNilOnErrorNotATypedNilPointer(t *testing.T) {
	failed := func() (*pointerResult, error) { return nil, errors.New("failed") }
	if r, err := AsResult(failed()); r != nil || err == nil {
		t.Errorf("AsResult(nil pointer, error) = %v, %v; want nil, the error", r, err)
	}
	done := func() (*pointerResult, error) { return &pointerResult{}, nil }
	if r, err := AsResult(done()); r == nil || err != nil {
		t.Errorf("AsResult(result, nil) = %v, %v; want the result, nil", r, err)
	}
}
