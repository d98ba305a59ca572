//go:build unix

package worklock

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestSecondAcquireIsRefusedUntilRelease(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".work.lock")
	a, err := Acquire(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Acquire(path)
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("second Acquire while held: %v, want ErrBusy", err)
	}
	if want := "process " + strconv.Itoa(os.Getpid()); !strings.Contains(err.Error(), want) {
		t.Errorf("refusal %q does not name the holder (%s)", err, want)
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock file left after Release: %v", err)
	}
	b, err := Acquire(path)
	if err != nil {
		t.Fatalf("Acquire after Release: %v", err)
	}
	if err := b.Release(); err != nil {
		t.Fatal(err)
	}
	if err := b.Release(); err != nil {
		t.Errorf("second Release: %v", err)
	}
}

// TestHolderProcess is the child of TestLockOfKilledProcessIsFree: it
// takes the lock, says so, and waits to be killed.
func TestHolderProcess(t *testing.T) {
	path := os.Getenv("WORKLOCK_HOLD")
	if path == "" {
		t.Skip("the child process of TestLockOfKilledProcessIsFree")
	}
	if _, err := Acquire(path); err != nil {
		os.Stdout.WriteString("error " + err.Error() + "\n")
		os.Exit(1)
	}
	os.Stdout.WriteString("held\n")
	select {}
}

func TestLockOfKilledProcessIsFree(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".work.lock")
	child := exec.Command(os.Args[0], "-test.run=^TestHolderProcess$")
	child.Env = append(os.Environ(), "WORKLOCK_HOLD="+path)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "held\n" {
		child.Process.Kill()
		t.Fatalf("child: %q, %v", line, err)
	}
	_, err = Acquire(path)
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "process "+strconv.Itoa(child.Process.Pid)) {
		t.Errorf("Acquire while another process holds the lock: %v, want ErrBusy naming process %d", err, child.Process.Pid)
	}
	child.Process.Kill() // no Release: the kernel frees the lock, the file stays
	child.Wait()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the killed holder's lock file: %v", err)
	}
	l, err := Acquire(path)
	if err != nil {
		t.Fatalf("Acquire after the holder was killed: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

func TestAcquireInMissingFolderFails(t *testing.T) {
	_, err := Acquire(filepath.Join(t.TempDir(), "no-such-folder", ".work.lock"))
	if err == nil || errors.Is(err, ErrBusy) {
		t.Fatalf("Acquire in a missing folder: %v", err)
	}
}
