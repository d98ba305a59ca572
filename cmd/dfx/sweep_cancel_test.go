package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
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

// interruptWorking starts dfx with args (and env added to the
// environment), waits (up to a generous limit) until functions named like
// working run in it, sends SIGINT and returns the exit code, stdout,
// stderr and how long the process took to end after the signal.
func interruptWorking(t *testing.T, env []string, working string, args ...string) (int, string, string, time.Duration) {
	t.Helper()
	started := filepath.Join(t.TempDir(), "working")
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), env...), "DFX_TEST_MAIN=1", "DFX_TEST_WATCH="+working, "DFX_TEST_WATCH_FILE="+started)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	limit := time.After(3 * time.Minute)
	for _, err := os.Stat(started); err != nil; _, err = os.Stat(started) {
		select {
		case <-done:
			t.Fatalf("ended (exit %d) before %s ran; stderr %q", cmd.ProcessState.ExitCode(), working, errb.String())
		case <-limit:
			_ = cmd.Process.Kill()
			t.Fatalf("%s did not start within 3 minutes; stderr %q", working, errb.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatalf("signal: %v", err)
	}
	select {
	case err := <-done:
		took := time.Since(sent)
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errb.String(), took
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("still running a minute after SIGINT; stderr %q", errb.String())
	}
	return 0, "", "", 0
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
	for _, tc := range []struct {
		name, cmd, working string
		env, args          []string
	}{
		// each class's DDIM run of 64 rows × 200 steps lasts far longer than the bound
		{"plain sample", "sample", "mnist.(*Networks).SampleRows&" + executing, nil, []string{"-class", "3", "-n", "64", "-steps", "200", "-png", png}},
		{"nll exact trace of the eps network", "nll", "access.(*vjpRunner).run&" + executing, nil,
			[]string{"--checkpoint", eps, "--trace", "vjp", "--points", point}},
		{"density sampling with the exact trace", "sample", "access.(*vjpRunner).run&" + executing, nil,
			[]string{"-density", "offset:1", "-trace", "vjp", "-n", "2", "-png", png}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut, took := interruptWorking(t, tc.env, tc.working, append([]string{tc.cmd}, tc.args...)...)
			t.Logf("exit %d %.2f s after SIGINT", code, took.Seconds())
			if code != 1 || out != "" || !strings.HasSuffix(errOut, "dfx "+tc.cmd+": interrupted\n") {
				t.Errorf("exit %d, stdout %q, stderr %q; want 1, nothing, interrupted", code, out, errOut)
			}
			if took > 3*time.Second {
				t.Errorf("took %v to stop after SIGINT, want < 3 s", took)
			}
			if _, err := os.Stat(png); err == nil {
				t.Errorf("an interrupted run wrote %s", png)
			}
		})
	}
}
