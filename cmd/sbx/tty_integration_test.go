package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// underScript runs shellCmd under script(1), which gives it a pty as stdin
// and stdout; it returns script's result (with -e, the command's status).
func (b *box) underScript(shellCmd string) result {
	b.t.Helper()
	if _, err := exec.LookPath("script"); err != nil {
		b.t.Fatalf("the pty tests need script(1) (util-linux): %v", err)
	}
	// script's stdin stays open (and empty) until the command is done:
	// script's own handling of EOF on stdin would race with the command.
	stdin, keep, err := os.Pipe()
	if err != nil {
		b.t.Fatal(err)
	}
	defer stdin.Close()
	defer keep.Close()
	p := b.startCmd(opts{stdin: stdin}, "script", "-qec", shellCmd, "/dev/null")
	p.sbxRun = strings.Contains(shellCmd, " run ")
	p.ownNoteCheck = true
	r := p.wait()
	// The pty merges stderr into stdout and ends lines with CRLF.
	r.stdout = dropReclaimNotes(strings.ReplaceAll(r.stdout, "\r\n", "\n"))
	if rootless() {
		r.stdout, r.notes = dropLimitsNotes(r.stdout)
		checkLimitsNote(b.t, p.cmd.Args, p.sbxRun, r.code, r.notes)
	}
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
		// The program gets the caller's terminal as it is, not a pty of
		// its own (whose /dev/pts/N tty(1) would name).
		if r := b.underScript(sbx + " run --tty never -- sh -c " + shellQuote(probe)); r.code != 0 || !strings.HasPrefix(r.stdout, "not a tty\n") {
			t.Errorf("--tty never under script: want no pty of its own\n%v", r)
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

// TestTmuxWindowSize runs sbx in a tmux pane: the program sees the pane's
// size on its own pty, and a resize of the window reaches it.
func TestTmuxWindowSize(t *testing.T) {
	b := newBox(t)
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("the tmux test needs tmux: %v", err)
	}
	sock := uniqueName(t, "sbx-it-tmux")
	tmux := func(args ...string) string {
		t.Helper()
		cmd := b.command(context.Background(), opts{}, "tmux", append([]string{"-L", sock, "-f", "/dev/null"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %q: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	t.Cleanup(func() { _ = b.command(context.Background(), opts{}, "tmux", "-L", sock, "kill-server").Run() })
	file := func(name string) string { return filepath.Join(b.ws, name) }
	// The resize reaches the program as SIGWINCH from its own pty.
	program := `trap 'stty size > ` + shellQuote(file("size2")) + `; exit 0' WINCH; stty size > ` + shellQuote(file("size1")) + `; while :; do sleep 0.05; done`
	pane := shellQuote(sbxBin) + " run --write -- sh -c " + shellQuote(program) + "; echo $? > " + shellQuote(file("status"))
	start := time.Now()
	tmux("new-session", "-d", "-s", "s", "-x", "80", "-y", "24", pane)
	server, err := strconv.Atoi(tmux("display-message", "-p", "-t", "s", "#{pid}"))
	if err != nil {
		t.Fatalf("tmux server pid: %v", err)
	}
	waitFile := func(name string) string {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if data, err := os.ReadFile(file(name)); err == nil && strings.HasSuffix(string(data), "\n") {
				return strings.TrimSpace(string(data))
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("%s not written within 20s", name)
		return ""
	}
	if got := waitFile("size1"); got != "24 80" {
		t.Errorf("size in the sandbox = %q, want the pane's \"24 80\"", got)
	}
	tmux("resize-window", "-t", "s", "-x", "100", "-y", "30")
	if got := waitFile("size2"); got != "30 100" {
		t.Errorf("size after resizing the window = %q, want \"30 100\"", got)
	}
	if got := waitFile("status"); got != "0" {
		t.Errorf("sbx in tmux exited %s, want 0", got)
	}
	ids, err := runs.ids(server, start, 2*time.Second)
	if err != nil || len(ids) != 1 {
		t.Fatalf("sandbox of the tmux run: %v %v", ids, err)
	}
	assertNoLeftovers(t, ids[0])
}
