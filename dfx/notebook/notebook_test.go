package notebook

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dfx-lab/dfx/dfx/report"
)

func TestKnobsStartAtTheirDefaults(t *testing.T) {
	ks := NewKnobs()
	tk := ks.Slider("t", []float64{0.1, 0.5, 1}, 1)
	est := ks.Choice("estimator", []string{"exact", "df-tm"}, 1)
	if tk.Float() != 0.5 || tk.String() != "0.5" || tk.Index() != 1 {
		t.Errorf("slider at %v %q %d", tk.Float(), tk.String(), tk.Index())
	}
	if est.String() != "df-tm" || est.Float() != 0 {
		t.Errorf("choice at %q %v", est.String(), est.Float())
	}
	h := ks.staticHTML("hint")
	for _, want := range []string{`min="0" max="2" value="1"> <code>0.5</code>`, "<option selected>df-tm</option>", "hint"} {
		if !strings.Contains(h, want) {
			t.Errorf("static knobs lack %q:\n%s", want, h)
		}
	}
	if got := ks.summary(); got != "t = 0.5, estimator = df-tm" {
		t.Errorf("summary %q", got)
	}
}

type fixed struct{ rep *report.Report }

func (f fixed) Report() (*report.Report, error) { return f.rep, nil }

func TestExploreOutsideANotebookRunsOnceAtTheDefaults(t *testing.T) {
	ks := NewKnobs()
	scale := ks.Slider("scale", []float64{0, 1, 3}, 2)
	runs := 0
	ks.Explore(func(ctx context.Context) (report.Result, error) {
		runs++
		return fixed{&report.Report{Name: fmt.Sprint("s", scale.Float())}}, nil
	})
	if runs != 1 {
		t.Errorf("%d runs", runs)
	}
}

func TestProgressKeepsOnlyTheLastLine(t *testing.T) {
	current = nil
	w := Progress()
	fmt.Fprint(w, "step 1\nstep 2\r")
	fmt.Fprint(w, "step 3 partial")
	p := current
	if p.last != "step 2" || string(p.partial) != "step 3 partial" {
		t.Errorf("last %q, partial %q", p.last, p.partial)
	}
	if Progress() != w {
		t.Error("a second Progress is a new line")
	}
	finishProgress(errors.New("x"))
	if !p.done {
		t.Error("not finished")
	}
	current = nil
}

// TestAwaitNewestTakesTheNewestAttemptsAnswer: an attempt that does not
// answer within the retry is followed by another; the answer of an older
// attempt, come late, is not taken; no answer by giveUp, or a cancelled
// context, is a failure.
func TestAwaitNewestTakesTheNewestAttemptsAnswer(t *testing.T) {
	const retry = 20 * time.Millisecond
	late := make(chan int, 1)
	got, ok := awaitNewest(context.Background(), retry, time.Minute, func(n int) <-chan int {
		answer := make(chan int, 1)
		switch n {
		case 0: // answers only after attempt 1 has started: ignored
			go func() { time.Sleep(3 * retry / 2); answer <- 0; late <- 0 }()
		case 1: // never answers
		default:
			<-late
			answer <- n
		}
		return answer
	})
	if !ok || got != 2 {
		t.Errorf("awaitNewest = %d, %v; want attempt 2's answer", got, ok)
	}

	attempts := 0
	if _, ok := awaitNewest(context.Background(), retry, 5*retry, func(int) <-chan int {
		attempts++
		return make(chan int)
	}); ok || attempts < 3 {
		t.Errorf("no answer: ok = %v after %d attempts; want a failure after several", ok, attempts)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok := awaitNewest(ctx, time.Minute, time.Minute, func(int) <-chan int { return make(chan int) }); ok {
		t.Error("a cancelled context: awaitNewest reported an answer")
	}
}
