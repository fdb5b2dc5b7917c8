package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fullScreen is a full-screen program: in raw mode it clears the screen,
// draws fixed lines, makes a connection the wall refuses (a reported
// denial), draws one more line and holds the screen for a while.
const fullScreen = `import socket, sys, termios, time, tty
fd = sys.stdin.fileno()
old = termios.tcgetattr(fd)
tty.setraw(fd)
w = sys.stdout.write
w("\x1b[2J\x1b[H")
for i in range(5):
    w("\x1b[%d;1HROW %d ==========" % (i + 1, i))
sys.stdout.flush()
try:
    socket.create_connection(("192.0.2.1", 80), timeout=2)
except OSError as e:
    w("\x1b[7;1Hconnect: %s" % e.strerror)
sys.stdout.flush()
time.sleep(2)
termios.tcsetattr(fd, termios.TCSADRAIN, old)
`

// Issue 18: with a pty, sbx's denial lines never land on a full-screen
// program's screen: they are held until the program has ended (and the
// terminal is restored), then printed after its last screen. The screen is
// read from tmux (capture-pane) while the program holds it.
func TestDenialLinesKeepFullScreen(t *testing.T) {
	b := newBox(t)
	if rootless() {
		t.Skip("rootless, a refused connection is not reported (no BPF wall): no denial line to place")
	}
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatalf("the screen test needs tmux (.ci/deps.sh installs it): %v", err)
	}
	writeFile(t, filepath.Join(b.ws, "screen.py"), fullScreen, 0o644)
	sock := filepath.Join(t.TempDir(), "tmux.sock")
	tm := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(tmux, append([]string{"-S", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %q: %v: %s", args, err, out)
		}
		return string(out)
	}
	done := filepath.Join(b.ws, "done")
	cmd := "cd " + shellQuote(b.ws) + " && env XDG_DATA_HOME=" + shellQuote(b.data) + " " + shellQuote(sbxBin) +
		" run --tty always -- python3 screen.py; echo exit=$? > " + shellQuote(done) + "; sleep 30"
	tm("new-session", "-d", "-x", "80", "-y", "24", cmd)
	t.Cleanup(func() { exec.Command(tmux, "-S", sock, "kill-server").Run() })
	capture := func() []string {
		return strings.Split(strings.TrimRight(tm("capture-pane", "-p"), "\n"), "\n")
	}
	want := []string{"ROW 0 ==========", "ROW 1 ==========", "ROW 2 ==========", "ROW 3 ==========", "ROW 4 ==========", "", "connect: Operation not permitted"}
	var screen []string
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		screen = capture()
		if len(screen) >= 7 && screen[6] == want[6] {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The denial is reported within milliseconds; give a line time to land.
	time.Sleep(500 * time.Millisecond)
	screen = capture()
	if len(screen) != len(want) || strings.Join(screen, "\n") != strings.Join(want, "\n") {
		t.Errorf("screen while the program runs:\n%s\nwant:\n%s", strings.Join(screen, "\n"), strings.Join(want, "\n"))
	}
	for time.Now().Before(deadline) {
		if _, err := os.Stat(done); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	status, _ := os.ReadFile(done)
	after := strings.Join(capture(), "\n")
	if string(status) != "exit=0\n" || !strings.Contains(after, "sbx: denied connect 192.0.2.1:80") {
		t.Errorf("after the run: status %q, screen:\n%s\nwant exit 0 and the denial line", status, after)
	}
	// The held line starts at column 0 on a line of its own.
	for _, l := range strings.Split(after, "\n") {
		if strings.Contains(l, "sbx: denied") && !strings.HasPrefix(l, "sbx: denied") {
			t.Errorf("denial line not at column 0: %q", l)
		}
	}
}
