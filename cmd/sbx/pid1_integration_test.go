package main

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// buildStatic compiles the C helper cmd/sbx/testdata/NAME.c, static, into
// the box's workspace and returns its path there.
func buildStatic(b *box, name string) string {
	b.t.Helper()
	bin := filepath.Join(b.ws, name)
	src := filepath.Join("testdata", name+".c")
	if out, err := exec.Command("gcc", "-static", "-O2", "-Wall", "-Wextra", "-Werror", "-o", bin, src).CombinedOutput(); err != nil {
		b.t.Fatalf("gcc %s: %v\n%s", src, err, out)
	}
	return bin
}

// forwardedSignals are the signals the shim passes on to the program
// (sandbox.forwarded): sent to PID 1 by the program, they come back to it.
var forwardedSignals = []syscall.Signal{
	syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGCONT, syscall.SIGALRM,
}

// TestPID1Signals: the program sends PID 1 (sbx's shim) every signal that
// is not forwarded back to it, 1 to 64, by kill(2) and by
// rt_sigqueueinfo(2) with SI_QUEUE (a SIGSEGV that looks like a fault to
// Go's runtime), SIGKILL and SIGSTOP included, then exits 7: the shim stays
// up and the run's status is the program's 7. Before the shim ignored
// them, kill -SEGV 1 (or ABRT, BUS, FPE, ILL, TRAP, SYS, STKFLT) crashed
// it and the run ended with 2. Control: the program's own dispositions are
// the defaults (it dies of its own SIGSEGV, 139), not an inherited
// SIG_IGN.
func TestPID1Signals(t *testing.T) {
	b := newBox(t)
	bin := buildStatic(b, "sigpid1")
	var sigs []string
	for s := syscall.Signal(1); s <= 64; s++ {
		if !slices.Contains(forwardedSignals, s) {
			sigs = append(sigs, strconv.Itoa(int(s)))
		}
	}
	r := b.run(append([]string{"--", bin}, sigs...)...)
	if r.code != 7 || !strings.Contains(r.stdout, "pid1 alive\n") {
		t.Fatalf("program that signals PID 1 and exits 7: want status 7 and PID 1 alive\n%v", r)
	}
	if strings.Contains(r.stderr, "goroutine") || strings.Contains(r.stderr, "sbx:") {
		t.Errorf("the shim complained:\n%s", r.stderr)
	}
	sent := 0
	for _, l := range lines(r.stdout) {
		if f := strings.Fields(l); len(f) == 3 && f[1] == "kill=OK" && f[2] == "queue=OK" {
			sent++
		}
	}
	switch {
	case sent == len(sigs):
	case rootless() && sent == 0 && strings.Contains(r.stdout, "kill=EPERM"):
		// The shim is outside the program's Landlock domain, whose
		// signal scope (ABI 6) refuses the signals before they are sent.
		t.Logf("rootless: the program may not signal PID 1 at all (Landlock's signal scope)")
	default:
		t.Errorf("%d of %d signals sent by both calls, want all:\n%s", sent, len(sigs), r.stdout)
	}

	self := b.run("--", bin, "-self", strconv.Itoa(int(syscall.SIGSEGV)))
	if self.code != 128+int(syscall.SIGSEGV) {
		t.Errorf("program's own SIGSEGV: status %d, want %d (default disposition)\n%v", self.code, 128+int(syscall.SIGSEGV), self)
	}
}
