//go:build unix && !solaris && !aix

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
	"time"
)

func TestSecondAcquireIsRefusedUntilRelease(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".work.lock")
	a, err := Acquire(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Acquire(path)
	if !errors.Is(err, ErrBusy) {
		b.Release()
		t.Fatalf("second Acquire while held: %v, want ErrBusy", err)
	}
	host, _ := os.Hostname()
	if want := "process " + strconv.Itoa(os.Getpid()) + " on host " + host; !strings.Contains(err.Error(), want) {
		t.Errorf("refusal %q does not name the holder (%s)", err, want)
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock file left after Release: %v", err)
	}
	b, err = Acquire(path)
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

// TestReleaseBetweenOpenAndLockIsRetried: a holder that releases (removes
// the file, then unlocks) after the next run opened the file but before it
// locked it leaves that run a lock on a file no longer at the path; the
// run must notice and lock the file that is there, so that a third run is
// still refused.
func TestReleaseBetweenOpenAndLockIsRetried(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".work.lock")
	a, err := Acquire(path)
	if err != nil {
		t.Fatal(err)
	}
	opens := 0
	betweenOpenAndLock = func() {
		if opens++; opens == 1 {
			a.Release()
		}
	}
	b, err := Acquire(path)
	betweenOpenAndLock = nil
	if err != nil {
		t.Fatalf("Acquire as the holder released: %v", err)
	}
	defer b.Release()
	if opens != 2 {
		t.Errorf("%d opens, want 2 (the file released under it, then the new one)", opens)
	}
	if c, err := Acquire(path); !errors.Is(err, ErrBusy) {
		c.Release()
		t.Errorf("a third run while the second holds the lock: %v, want ErrBusy (the second locked a removed file)", err)
	}
}

// holder keeps the child's lock reachable until the process is killed.
var holder *Lock

// TestHolderProcess is the child of TestLockOfKilledProcessIsFree: it
// takes the lock, says so, and waits to be killed.
func TestHolderProcess(t *testing.T) {
	path := os.Getenv("WORKLOCK_HOLD")
	if path == "" {
		t.Skip("the child process of TestLockOfKilledProcessIsFree")
	}
	var err error
	if holder, err = Acquire(path); err != nil {
		os.Stdout.WriteString("error " + err.Error() + "\n")
		os.Exit(1)
	}
	os.Stdout.WriteString("held\n")
	time.Sleep(time.Hour) // a timer, not select{}: the runtime would end a deadlocked process itself
}

func TestLockOfKilledProcessIsFree(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".work.lock")
	child := exec.Command(os.Args[0], "-test.run=^TestHolderProcess$", "-test.timeout=2h")
	child.Env = append(os.Environ(), "WORKLOCK_HOLD="+path)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "held\n" {
		t.Fatalf("child: %q, %v", line, err)
	}
	time.Sleep(100 * time.Millisecond) // the child is still alive, and still holds it
	l, err := Acquire(path)
	if !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "process "+strconv.Itoa(child.Process.Pid)+" ") {
		l.Release()
		t.Errorf("Acquire while another process holds the lock: %v, want ErrBusy naming process %d", err, child.Process.Pid)
	}
	child.Process.Kill() // no Release: the kernel frees the lock, the file stays
	child.Wait()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the killed holder's lock file: %v", err)
	}
	l, err = Acquire(path)
	if err != nil {
		t.Fatalf("Acquire after the holder was killed: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

func TestAcquireInMissingFolderFails(t *testing.T) {
	l, err := Acquire(filepath.Join(t.TempDir(), "no-such-folder", ".work.lock"))
	if err == nil || errors.Is(err, ErrBusy) {
		l.Release()
		t.Fatalf("Acquire in a missing folder: %v", err)
	}
}
