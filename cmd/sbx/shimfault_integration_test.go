package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// shimOf returns the pid of the sandbox's PID 1 (sbx's shim): the parent of
// the one host process whose command line is cmdline.
func shimOf(t *testing.T, cmdline string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if pids := pgrep(t, cmdline); len(pids) == 1 {
			data, err := os.ReadFile("/proc/" + pids[0] + "/stat")
			if err != nil {
				t.Fatal(err)
			}
			s := string(data)
			ppid, err := strconv.Atoi(strings.Fields(s[strings.LastIndexByte(s, ')')+1:])[1])
			if err != nil {
				t.Fatal(err)
			}
			return ppid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no single process %q", cmdline)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStoppedShim: a shim that cannot pass a SIGTERM on (stopped from the
// host) does not make sbx wait forever: after StopGrace sbx kills the
// sandbox and says so. Not parallel: it takes the 10 s grace.
func TestStoppedShim(t *testing.T) {
	b := newBox(t)
	const marker = "300.0441"
	p := b.start(opts{}, "run", "--", "sleep", marker)
	shim := shimOf(t, "sleep "+marker)
	if err := syscall.Kill(shim, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	p.signal(syscall.SIGTERM)
	r := p.wait()
	if r.code != 137 || !strings.Contains(r.stderr, "did not end within 10s of SIGTERM: killed it") {
		t.Errorf("want 137 and the reason\n%v", r)
	}
	if d := time.Since(sent); d > 20*time.Second {
		t.Errorf("sbx took %v after SIGTERM", d)
	}
}

// TestShimKilledFromOutside: when something on the host kills the
// sandbox's PID 1, sbx says so (the program's status is lost) instead of
// exiting 137 without a word. The control: a program that dies of SIGKILL
// itself gives 137 without that line.
func TestShimKilledFromOutside(t *testing.T) {
	b := newBox(t)
	const marker = "300.0442"
	p := b.start(opts{}, "run", "--", "sleep", marker)
	shim := shimOf(t, "sleep "+marker)
	if err := syscall.Kill(shim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r := p.wait()
	if r.code != 137 || !strings.Contains(r.stderr, "killed by SIGKILL from outside sbx") {
		t.Errorf("want 137 and the reason\n%v", r)
	}
	r = b.run("--", "sh", "-c", "kill -9 $$")
	if r.code != 137 || strings.Contains(r.stderr, "from outside") {
		t.Errorf("control\n%v", r)
	}
}
