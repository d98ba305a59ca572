package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dfx-lab/dfx/internal/testwait"
)

// executing is on a goroutine's stack while a compiled graph runs on the
// Go backend (not while it is being built or compiled).
const executing = "gobackend.(*Executable).Execute"

// In a child started by interruptWorking, a goroutine watches the stacks
// of all goroutines and creates the file DFX_TEST_WATCH_FILE once one
// goroutine runs functions whose names contain each of the "&"-separated
// parts of DFX_TEST_WATCH (e.g. a sampler's and executing): the signal
// that the command is inside its long loop, past loading the networks and
// compiling the graph.
func init() {
	fn, file := os.Getenv("DFX_TEST_WATCH"), os.Getenv("DFX_TEST_WATCH_FILE")
	if os.Getenv("DFX_TEST_MAIN") != "1" || fn == "" || file == "" {
		return
	}
	go func() {
		buf := make([]byte, 1<<20)
		for {
			n := runtime.Stack(buf, true)
			for _, g := range bytes.Split(buf[:n], []byte("\n\n")) {
				all := true
				for _, part := range strings.Split(fn, "&") {
					all = all && bytes.Contains(g, []byte(part))
				}
				if all {
					os.WriteFile(file, nil, 0o644)
					return
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
}

// interruptWorking starts dfx with args (env added to the environment,
// stdin as its standard input if not nil), waits (up to testwait.Limit) until
// functions named like working run in it, sends SIGINT and returns the exit
// code, stdout, stderr and the CPU time the process used after the signal
// (CPU, not wall time, so that a loaded machine does not make a prompt stop
// look slow; a stop that blocks is caught by stopWallLimit).
func interruptWorking(t *testing.T, env []string, stdin io.Reader, working string, args ...string) (int, string, string, time.Duration) {
	t.Helper()
	if _, err := cpuTime(os.Getpid()); err != nil {
		t.Skipf("needs /proc to measure a process's CPU time: %v", err)
	}
	started := filepath.Join(t.TempDir(), "working")
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), env...), "DFX_TEST_MAIN=1", "DFX_TEST_WATCH="+working, "DFX_TEST_WATCH_FILE="+started)
	var out, errb bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer cmd.Process.Kill() // when the test fails while it runs
	waitFor(t, working+" to run in dfx "+strings.Join(args, " "), testwait.Limit(t), func() bool {
		select {
		case <-done:
			t.Fatalf("ended (exit %d) before %s ran; stderr %q", cmd.ProcessState.ExitCode(), working, errb.String())
		default:
		}
		_, err := os.Stat(started)
		return err == nil
	})
	before, _ := cpuTime(cmd.Process.Pid)
	return stopWithSIGINT(t, cmd, done, &out, &errb, before)
}

// TestSIGINTStopsLongMNISTWorkPromptly interrupts each slow command once
// it is inside its long loop (a DDIM step, one of the 784 VJPs of an exact
// trace) and wants it to end within a few seconds, as interrupted (exit
// 1, one line), with nothing on stdout and no output file.
func TestSIGINTStopsLongMNISTWorkPromptly(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes that load the MNIST networks")
	}
	dir := t.TempDir()
	var row []string
	for j := range 784 {
		row = append(row, fmt.Sprintf("%.3f", float64(j%17)/8-1))
	}
	point := filepath.Join(dir, "x.csv")
	if err := os.WriteFile(point, []byte(strings.Join(row, ",")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	eps := filepath.Join("..", "..", "mnist", "checkpoints", "eps.dfxckpt")
	png := filepath.Join(dir, "out.png")
	// a pipe whose writer stays open and sends nothing (an *os.File, so
	// that exec hands it over without a copying goroutine)
	stalled := func() io.Reader {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(); w.Close() })
		return r
	}
	for _, tc := range []struct {
		name, cmd, working string
		env, args          []string
		stdin              func() io.Reader
	}{
		// each class's DDIM run of 64 rows × 200 steps lasts far longer than the bound
		{"plain sample", "sample", "mnist.(*Networks).SampleRows&" + executing, nil, []string{"-class", "3", "-n", "64", "-steps", "200", "-png", png}, nil},
		{"nll exact trace of the eps network", "nll", "access.(*vjpRunner).run&" + executing, nil,
			[]string{"--checkpoint", eps, "--trace", "vjp", "--points", point}, nil},
		{"density sampling with the exact trace", "sample", "access.(*vjpRunner).run&" + executing, nil,
			[]string{"-density", "offset:1", "-trace", "vjp", "-n", "2", "-png", png}, nil},
		// reading - from a pipe whose writer sends nothing blocks in a read, not in work
		{"nll reading a silent stdin", "nll", "input.spool", nil,
			[]string{"--gmm", filepath.Join("..", "..", "examples", "gmm.json"), "--points", "-", "--schedule", "vp"}, stalled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdin io.Reader
			if tc.stdin != nil {
				stdin = tc.stdin()
			}
			code, out, errOut, took := interruptWorking(t, tc.env, stdin, tc.working, append([]string{tc.cmd}, tc.args...)...)
			t.Logf("exit %d, %.2f s of CPU after SIGINT", code, took.Seconds())
			if code != 1 || out != "" || !strings.HasSuffix(errOut, "dfx "+tc.cmd+": interrupted\n") {
				t.Errorf("exit %d, stdout %q, stderr %q; want 1, nothing, interrupted", code, out, errOut)
			}
			if took > time.Second {
				t.Errorf("used %v of CPU after SIGINT, want < 1 s", took)
			}
			if _, err := os.Stat(png); err == nil {
				t.Errorf("an interrupted run wrote %s", png)
			}
		})
	}
}
