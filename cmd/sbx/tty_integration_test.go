package main

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// underScript runs shellCmd under script(1), which gives it a pty as stdin
// and stdout; it returns script's result (with -e, the command's status).
func (b *box) underScript(shellCmd string) result {
	b.t.Helper()
	if _, err := exec.LookPath("script"); err != nil {
		b.t.Fatalf("the pty tests need script(1) (util-linux): %v", err)
	}
	p := b.startCmd(opts{}, "script", "-qec", shellCmd, "/dev/null")
	p.sbxRun = strings.Contains(shellCmd, " run ")
	r := p.wait()
	r.stdout = strings.ReplaceAll(r.stdout, "\r\n", "\n")
	return r
}

// TestPty: with a terminal on stdin and stdout, the program gets its own
// pty; without one, plain pipes.
func TestPty(t *testing.T) {
	b := newBox(t)
	const probe = `tty; test -t 0 && echo stdin-tty; test -t 1 && echo stdout-tty; true`
	sbx := shellQuote(sbxBin)
	t.Run("terminal", func(t *testing.T) {
		t.Parallel()
		b := b.in(t)
		r := b.underScript(sbx + " run -- sh -c " + shellQuote(probe))
		if r.code != 0 || !regexp.MustCompile(`^/dev/pts/\d+\nstdin-tty\nstdout-tty\n$`).MatchString(r.stdout) {
			t.Errorf("sbx run under script: want a pty of the sandbox's own\n%v", r)
		}
	})
	t.Run("exit status through the pty", func(t *testing.T) {
		t.Parallel()
		b := b.in(t)
		if r := b.underScript(sbx + " run -- sh -c 'echo out; exit 5'"); r.code != 5 || r.stdout != "out\n" {
			t.Errorf("exit 5 under script\n%v", r)
		}
	})
	t.Run("--tty never", func(t *testing.T) {
		t.Parallel()
		b := b.in(t)
		if r := b.underScript(sbx + " run --tty never -- sh -c " + shellQuote(probe)); r.code != 0 || r.stdout != "not a tty\n" {
			t.Errorf("--tty never under script: want no tty\n%v", r)
		}
	})
	t.Run("no terminal", func(t *testing.T) {
		t.Parallel()
		b := b.in(t)
		if r := b.run("--", "sh", "-c", probe); r.code != 0 || r.stdout != "not a tty\n" {
			t.Errorf("sbx run with pipes: want no tty\n%v", r)
		}
	})
}

// TestTIOCSTI: the program cannot push input into a terminal with TIOCSTI
// (EPERM), while the same ioctl works outside the sandbox.
func TestTIOCSTI(t *testing.T) {
	b := newBox(t)
	inject := python + ` -c 'import fcntl, termios; fcntl.ioctl(0, termios.TIOCSTI, b"x"); print("injected")'`
	r := b.underScript(shellQuote(sbxBin) + " run -- " + inject)
	if r.code != 1 || strings.Contains(r.stdout, "injected") || !strings.Contains(r.stdout, "PermissionError: [Errno 1] Operation not permitted") {
		t.Errorf("TIOCSTI in the sandbox: want EPERM\n%v", r)
	}
	if c := b.underScript(inject); c.code != 0 || !strings.Contains(c.stdout, "injected") {
		t.Errorf("control: TIOCSTI on the host under script\n%v", c)
	}
}
