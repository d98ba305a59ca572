package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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

// interrupt starts dfx with args, sends SIGINT after wait and returns the
// exit code, stdout, stderr and how long the process took to end after
// the signal.
func interrupt(t *testing.T, wait time.Duration, args ...string) (int, string, string, time.Duration) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "DFX_TEST_MAIN=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(wait)
	sent := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatalf("signal: %v (ended early? stderr %q)", err, errb.String())
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		took := time.Since(sent)
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errb.String(), took
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("still running 10 s after SIGINT; stderr %q", errb.String())
	}
	return 0, "", "", 0
}

func TestSIGINTStopsALongOTRunPromptly(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	code, out, errOut, took := interrupt(t, 1500*time.Millisecond,
		"ot", "--preset", "paper-nonaffine", "--chains", "20000", "--steps", "1000000", "--solver", "rk4")
	t.Logf("exit %d %.2fs after SIGINT; stderr %q", code, took.Seconds(), errOut)
	if code == 0 || out != "" || errOut != "dfx ot: interrupted\n" {
		t.Errorf("exit %d, stdout %q, stderr %q; want non-zero, nothing, one line", code, out, errOut)
	}
	if took > time.Second {
		t.Errorf("took %v to stop after SIGINT, want < 1 s", took)
	}
}

func TestSIGINTDuringReproduceLeavesNoTemporaryFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	dir := t.TempDir()
	code, out, errOut, took := interrupt(t, 700*time.Millisecond, "reproduce", "-quick", "-out", dir, "ot")
	t.Logf("exit %d %.2fs after SIGINT", code, took.Seconds())
	if code != 1 || out != "" || !strings.HasSuffix(errOut, "dfx reproduce ot: interrupted\n") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1, nothing, interrupted", code, out, errOut)
	}
	if took > time.Second {
		t.Errorf("took %v to stop after SIGINT, want < 1 s", took)
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if strings.Contains(d.Name(), ".tmp-") || strings.Contains(d.Name(), ".dfx-write-check") {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
}
