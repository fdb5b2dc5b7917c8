package main

import (
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSignalsForwarded: signals sent to sbx reach the program, which can
// trap them.
func TestSignalsForwarded(t *testing.T) {
	b := newBox(t)
	for _, c := range []struct {
		name string
		sig  syscall.Signal
	}{
		{"TERM", syscall.SIGTERM}, {"INT", syscall.SIGINT}, {"HUP", syscall.SIGHUP},
		{"QUIT", syscall.SIGQUIT}, {"USR1", syscall.SIGUSR1}, {"USR2", syscall.SIGUSR2},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := b.in(t)
			script := `trap "echo got ` + c.name + `; exit 3" ` + c.name + `; echo ready; while :; do sleep 0.1; done`
			p := b.start(opts{timeout: 10 * time.Second}, "run", "--", "sh", "-c", script)
			p.waitLine("ready")
			p.signal(c.sig)
			r := p.wait()
			if r.code != 3 || r.stdout != "ready\ngot "+c.name+"\n" {
				t.Errorf("SIG%s to sbx: want the trap to run and exit 3\n%v", c.name, r)
			}
		})
	}
	// Without a trap the program dies of the signal: this works because
	// the program is not PID 1 of its namespace (the shim is), so the
	// kernel does not ignore default-action signals for it.
	for _, c := range []struct {
		name string
		sig  syscall.Signal
	}{{"INT", syscall.SIGINT}, {"TERM", syscall.SIGTERM}, {"HUP", syscall.SIGHUP}} {
		t.Run("untrapped "+c.name, func(t *testing.T) {
			t.Parallel()
			b := b.in(t)
			p := b.start(opts{timeout: 10 * time.Second}, "run", "--", "sh", "-c", "echo ready; exec sleep 30")
			p.waitLine("ready")
			p.signal(c.sig)
			r := p.wait()
			if r.code != 128+int(c.sig) {
				t.Errorf("SIG%s to sbx running sleep: want %d\n%v", c.name, 128+int(c.sig), r)
			}
			if r.elapsed > 20*time.Second {
				t.Errorf("SIG%s: sleep 30 ran to its end (%v)", c.name, r.elapsed)
			}
		})
	}
}

// TestSignalsForwardedOnce: each signal sent to sbx reaches the program
// exactly once, whether the program is the leader of its process group
// (as sbx starts it) or has moved to another group. The program counts
// SIGUSR1s with a handler and prints the count on SIGTERM; a copy sent
// to the group and another to the program would be counted twice
// whenever the program handled the first before the second arrived.
func TestSignalsForwardedOnce(t *testing.T) {
	b := newBox(t)
	const sends = 20
	prog := `import os, signal, sys, time
n = 0
def usr1(*_):
    global n
    n += 1
def term(*_):
    print("count", n, flush=True)
    sys.exit(3)
signal.signal(signal.SIGUSR1, usr1)
signal.signal(signal.SIGTERM, term)
if sys.argv[1] == "leave":
    # A child leads a group of its own and the program joins it: the
    # program's own group is then empty.
    r, w = os.pipe()
    child = os.fork()
    if child == 0:
        os.setpgid(0, 0)
        os.write(w, b"x")
        time.sleep(60)
        os._exit(0)
    os.read(r, 1)
    os.setpgid(0, child)
    assert os.getpgid(0) != os.getpid()
print("ready", flush=True)
while True:
    time.sleep(0.01)
`
	for _, mode := range []string{"group", "leave"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b := b.in(t)
			p := b.start(opts{timeout: 30 * time.Second}, "run", "--", "python3", "-c", prog, mode)
			p.waitLine("ready")
			for range sends {
				p.signal(syscall.SIGUSR1)
				time.Sleep(50 * time.Millisecond)
			}
			p.signal(syscall.SIGTERM)
			r := p.wait()
			if want := fmt.Sprintf("ready\ncount %d\n", sends); r.code != 3 || r.stdout != want {
				t.Errorf("%d SIGUSR1s, then SIGTERM: want exit 3 and %q\n%v", sends, want, r)
			}
		})
	}
}

// TestStreaming: the program's stdout and stderr reach the caller as they
// are written (no buffering until exit), and stdin is passed through.
func TestStreaming(t *testing.T) {
	b := newBox(t)
	t.Run("output", func(t *testing.T) {
		t.Parallel()
		b := b.in(t)
		// The timeout ends the run (signals are tested elsewhere).
		p := b.start(opts{}, "run", "--timeout", "5s", "--", "sh", "-c", "echo first; echo err-first >&2; exec sleep 30")
		p.waitLine("first")
		if p.exited() {
			t.Errorf("the first line arrived only when sbx exited")
		}
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(p.stderrText(), "err-first") && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if !strings.Contains(p.stderrText(), "err-first\n") {
			t.Errorf("stderr line not streamed while the program runs: %q", p.stderrText())
		}
		if r := p.wait(); r.code != 124 || r.stdout != "first\n" || !strings.HasPrefix(r.stderr, "err-first\n") {
			t.Errorf("after the timeout\n%v", r)
		}
	})
	t.Run("input", func(t *testing.T) {
		t.Parallel()
		b := b.in(t)
		pr, pw := io.Pipe()
		defer pw.Close()
		p := b.start(opts{stdin: pr}, "run", "--", "sh", "-c", `echo ready; read x; echo "got $x"`)
		p.waitLine("ready")
		if _, err := io.WriteString(pw, "hello\n"); err != nil {
			t.Fatal(err)
		}
		p.waitLine("got hello")
		pw.Close()
		if r := p.wait(); r.code != 0 || r.stdout != "ready\ngot hello\n" {
			t.Errorf("stdin through sbx\n%v", r)
		}
	})
}

// TestNoOrphansAfterSIGKILL: when sbx itself is killed with SIGKILL, every
// process of its sandbox dies, and the next sbx run reclaims the cgroups and
// state the killed one left. Not parallel: it checks state that any other
// sbx run would also reclaim.
func TestNoOrphansAfterSIGKILL(t *testing.T) {
	b := newSerialBox(t)
	// Unusual durations, so that pgrep finds only these.
	sleeps := []string{"300.0173", "301.0173"}
	// With a throwaway home, which must not outlive the run either.
	p := b.start(opts{}, "run", "--home", "tmp", "--", "sh", "-c", "sleep "+sleeps[0]+" & sleep "+sleeps[1]+" & echo ready; wait")
	p.waitLine("ready")
	ids, err := runs.ids(p.cmd.Process.Pid, p.start, 5*time.Second)
	if err != nil || len(ids) != 1 {
		p.signal(syscall.SIGKILL)
		t.Fatalf("sandbox id of the run: %v %v", ids, err)
	}
	id := ids[0]
	for _, s := range sleeps {
		// "ready" follows the forks, not the children's exec: wait for
		// each sleep to be itself.
		for end := time.Now().Add(5 * time.Second); len(pgrep(t, "sleep "+s)) != 1; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(end) {
				p.signal(syscall.SIGKILL)
				t.Fatalf("control: sleep %s is not running on the host before the kill", s)
			}
		}
	}
	p.signal(syscall.SIGKILL)
	err = p.cmd.Wait()
	p.cancel()
	if exitCode(err) != 128+9 {
		t.Fatalf("sbx after SIGKILL: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := append(pgrep(t, "sleep "+sleeps[0]), pgrep(t, "sleep "+sleeps[1])...)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandbox processes %v still run 5s after sbx was killed", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The killed sbx could not tear down: its state is still there.
	if l := leftovers(id); len(l) == 0 {
		t.Logf("nothing of the killed sandbox %s left to reclaim", id)
	} else {
		t.Logf("left by the killed sbx: %s", strings.Join(l, ", "))
	}
	// The next run cleans up.
	r := b.sbx(opts{}, "run", "--", "true")
	if r.code != 0 {
		t.Errorf("next sbx run -- true\n%v", r)
	}
	assertNoLeftovers(t, id)
}

// pgrep returns the pids of host processes whose whole command line is
// cmdline.
func pgrep(t *testing.T, cmdline string) []string {
	t.Helper()
	out, err := exec.Command("pgrep", "-x", "-f", cmdline).Output()
	if err != nil && exitCode(err) != 1 {
		t.Fatalf("pgrep %q: %v", cmdline, err)
	}
	return lines(string(out))
}
