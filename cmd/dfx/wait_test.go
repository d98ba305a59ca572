package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// waitFor polls cond until it holds, and fails the test naming what it
// waited for once limit (testwait.Limit) has passed.
func waitFor(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	start := time.Now()
	for pause := 10 * time.Millisecond; !cond(); pause = min(2*pause, time.Second) {
		if time.Since(start) > limit {
			t.Fatalf("waited %v for %s", time.Since(start).Round(time.Millisecond), what)
		}
		time.Sleep(pause)
	}
}

// cpuTime is the CPU time (user and system, all threads) process pid has used
// so far, from /proc (Linux).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// the fields after the command's closing parenthesis: state is field 3, utime 14, stime 15
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %q", pid, b)
	}
	const tick = 10 * time.Millisecond // USER_HZ is 100 on Linux
	return time.Duration(utime+stime) * tick, nil
}
