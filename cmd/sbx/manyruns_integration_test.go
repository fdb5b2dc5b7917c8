package main

import (
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMoreRunsThanRings: more sandboxes than the host's denial rings (64)
// run at once; the one past them runs too, walled as ever (under --net none its inet
// socket is refused), with one warning that its denials are not reported,
// instead of failing. Not parallel: it counts the host's runs.
func TestMoreRunsThanRings(t *testing.T) {
	needRootTier(t, "bpf-report")
	b := newSerialBox(t)
	const marker = "600.0551"
	const n = 64
	var ps []*proc
	defer func() {
		for _, p := range ps {
			p.signal(syscall.SIGTERM)
		}
		for _, p := range ps {
			if r := p.wait(); r.code != 143 {
				t.Errorf("a sleeper ended with\n%v", r)
			}
		}
	}()
	// In batches, each running before the next starts, so that every one
	// of them takes a ring (many starts at once may race for the last
	// ones, and a loser runs without).
	deadline := time.Now().Add(2 * time.Minute)
	for i := 0; i < n; i++ {
		ps = append(ps, b.start(opts{timeout: 5 * time.Minute}, "run", "--", "sleep", marker))
		if len(ps)%8 != 0 {
			continue
		}
		for len(pgrep(t, "sleep "+marker)) < len(ps) {
			if time.Now().After(deadline) {
				t.Fatalf("only %d of %d sandboxes started", len(pgrep(t, "sleep "+marker)), len(ps))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// Rings held by other processes (other packages' tests) may come
	// free meanwhile: start more until a run finds none.
	for try := 0; ; try++ {
		r := b.run("--net", "none", "--", "python3", "-c", `import socket
try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    print("created")
except OSError as e:
    print(e.errno)`)
		if r.code != 0 || strings.TrimSpace(r.stdout) != "1" {
			t.Errorf("the run past the rings: want EPERM (1) for an inet socket\n%v", r)
		}
		if strings.Contains(r.stderr, "enforced but not reported") {
			break
		}
		if try == 4 {
			t.Fatalf("every run still found a free ring with %d sandboxes running\n%v", len(ps), r)
		}
		for i := 0; i < 8; i++ {
			ps = append(ps, b.start(opts{timeout: 5 * time.Minute}, "run", "--", "sleep", marker))
		}
		for len(pgrep(t, "sleep "+marker)) < len(ps) {
			if time.Now().After(deadline) {
				t.Fatalf("only %d of %d sandboxes started", len(pgrep(t, "sleep "+marker)), len(ps))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
