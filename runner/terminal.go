package runner

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/sbx-sandbox/sbx/report"
	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// terminal proxies the caller's terminal to the sandbox's pty: the caller's
// side in raw mode (so Ctrl-C reaches the program as a byte and its own tty
// makes the signal), window size changes forwarded.
type terminal struct {
	in     *os.File
	state  *term.State
	master *os.File
	// last is the last byte of the program's output (0: none yet).
	last atomic.Uint32
}

func newTerminal(in *os.File) (*terminal, error) {
	if in == nil || !term.IsTerminal(int(in.Fd())) {
		return nil, fmt.Errorf("terminal mode needs a terminal on stdin")
	}
	st, err := term.MakeRaw(int(in.Fd()))
	if err != nil {
		return nil, fmt.Errorf("put terminal in raw mode: %w", err)
	}
	return &terminal{in: in, state: st}, nil
}

// attach starts copying between the caller's terminal and master. The
// returned channel closes when the program's side of the pty is gone and
// all its output has been written to out.
func (t *terminal) attach(master *os.File, out io.Writer) chan struct{} {
	t.master = master
	t.resize()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(lastByte{out, &t.last}, master) // ends with EIO when the last slave fd closes
	}()
	go func() { _, _ = io.Copy(master, t.in) }()
	return done
}

// resize copies the caller's window size to the pty (the kernel then sends
// SIGWINCH to the program's foreground process group).
func (t *terminal) resize() {
	if t.master == nil {
		return
	}
	ws, err := unix.IoctlGetWinsize(int(t.in.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return
	}
	_ = unix.IoctlSetWinsize(int(t.master.Fd()), unix.TIOCSWINSZ, ws)
}

func (t *terminal) restore() {
	if t.state != nil {
		_ = term.Restore(int(t.in.Fd()), t.state)
	}
}

// holdLines keeps the reporter's "sbx: denied" lines until the run ends:
// a full-screen program (an agent's TUI) draws its screen in raw mode,
// where a line of sbx's, written whenever a denial happens, would land in
// the middle of it (and end in a bare \n, which raw mode does not return
// to column 0). At the end the caller's terminal is restored first (Run
// defers the restore after the reporter's finish, so it runs before it)
// and the held lines follow the program's last screen, from a line of
// their own. --violations gets every record at once as ever.
func (t *terminal) holdLines(rep *report.Reporter) {
	rep.HoldLines(func(w io.Writer) io.Writer { return &freshLine{w: w, t: t} })
}

// lastByte passes writes on to w and records the last byte written.
type lastByte struct {
	w    io.Writer
	last *atomic.Uint32
}

func (l lastByte) Write(p []byte) (int, error) {
	n, err := l.w.Write(p)
	if n > 0 {
		l.last.Store(uint32(p[n-1]) | 1<<8)
	}
	return n, err
}

// freshLine starts sbx's first line after the program's output on a line
// of its own: when the program's last byte was not a newline it writes
// "\r\n" first.
type freshLine struct {
	w       io.Writer
	t       *terminal
	started bool
}

func (f *freshLine) Write(p []byte) (int, error) {
	if last := f.t.last.Load(); !f.started && last != 0 {
		// Once the program has written: sbx's lines before (a warning
		// during setup) stand on lines of their own anyway.
		f.started = true
		if byte(last) != '\n' {
			_, _ = io.WriteString(f.w, "\r\n")
		}
	}
	return f.w.Write(p)
}
