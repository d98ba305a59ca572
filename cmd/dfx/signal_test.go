package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dfx-lab/dfx/internal/testwait"
)

// TestMain lets a test run this test binary as the dfx command itself
// (DFX_TEST_MAIN=1), so that signals reach a real process.
func TestMain(m *testing.M) {
	if os.Getenv("DFX_TEST_MAIN") == "1" {
		os.Args = append([]string{"dfx"}, os.Args[1:]...)
		os.Exit(mainWithSignals())
	}
	os.Exit(m.Run())
}

// stopWallLimit bounds the wall time from SIGINT to exit: a prompt stop
// needs under a second of CPU, so only a stop that blocks exceeds it.
const stopWallLimit = time.Minute

// interrupt starts dfx with args, sends SIGINT once the process has used
// work of CPU time, and returns the exit code, stdout, stderr and the CPU
// time the process used after the signal. Both are measured in CPU time, not
// wall time, so that a loaded machine neither sends the signal before the
// command has started its work nor makes a prompt stop look slow.
func interrupt(t *testing.T, work time.Duration, args ...string) (int, string, string, time.Duration) {
	t.Helper()
	if _, err := cpuTime(os.Getpid()); err != nil {
		t.Skipf("needs /proc to measure a process's CPU time: %v", err)
	}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "DFX_TEST_MAIN=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer cmd.Process.Kill() // when the test fails while it runs
	var before time.Duration
	var waitErr error
	ended := false
	waitFor(t, fmt.Sprintf("dfx %s to use %v of CPU", strings.Join(args, " "), work), testwait.Limit(t), func() bool {
		select {
		case waitErr = <-done:
			ended = true
			return true
		default:
		}
		var err error
		before, err = cpuTime(cmd.Process.Pid)
		return err == nil && before >= work // an error: it has just ended, seen on the next poll
	})
	if ended {
		t.Fatalf("dfx ended before the signal (%v): stdout %q, stderr %q", waitErr, out.String(), errb.String())
	}
	return stopWithSIGINT(t, cmd, done, &out, &errb, before)
}

// stopWithSIGINT sends SIGINT to the running cmd (done receives its Wait)
// and waits for it to end; it returns the exit code, stdout, stderr and
// the CPU time the process used after before. A stop that waits without
// computing (a blocked read, a sleep) costs no CPU: a wall-clock bound far
// above any machine's load (stopWallLimit) catches it.
func stopWithSIGINT(t *testing.T, cmd *exec.Cmd, done <-chan error, out, errb *bytes.Buffer, before time.Duration) (int, string, string, time.Duration) {
	t.Helper()
	signalled := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatalf("dfx ended before the signal (%v): stdout %q, stderr %q", <-done, out.String(), errb.String())
	}
	var waitErr error
	select {
	case waitErr = <-done:
		if wall := time.Since(signalled); wall > stopWallLimit {
			t.Errorf("dfx took %v of wall time to end after SIGINT, want < %v", wall.Round(time.Second), stopWallLimit)
		}
	case <-time.After(testwait.Limit(t)):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("waited %v for dfx to end after SIGINT; stderr %q", testwait.Limit(t), errb.String())
	}
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) {
		t.Fatal(waitErr)
	}
	used := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return cmd.ProcessState.ExitCode(), out.String(), errb.String(), used - before
}

func TestSIGINTStopsALongOTRunPromptly(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	code, out, errOut, took := interrupt(t, 1500*time.Millisecond,
		"ot", "--preset", "paper-nonaffine", "--chains", "20000", "--steps", "1000000", "--solver", "rk4")
	t.Logf("exit %d after %.2fs of CPU after SIGINT; stderr %q", code, took.Seconds(), errOut)
	if code == 0 || out != "" || errOut != "dfx ot: interrupted\n" {
		t.Errorf("exit %d, stdout %q, stderr %q; want non-zero, nothing, one line", code, out, errOut)
	}
	if took > time.Second {
		t.Errorf("used %v of CPU after SIGINT, want < 1 s", took)
	}
}

func TestSIGINTDuringReproduceLeavesNoTemporaryFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	dir := t.TempDir()
	code, out, errOut, took := interrupt(t, 700*time.Millisecond, "reproduce", "-quick", "-out", dir, "ot")
	t.Logf("exit %d after %.2fs of CPU after SIGINT", code, took.Seconds())
	if code != 1 || out != "" || !strings.HasSuffix(errOut, "dfx reproduce ot: interrupted\n") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1, nothing, interrupted", code, out, errOut)
	}
	if took > time.Second {
		t.Errorf("used %v of CPU after SIGINT, want < 1 s", took)
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if strings.Contains(d.Name(), ".tmp-") || strings.Contains(d.Name(), ".dfx-write-check") {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
}
