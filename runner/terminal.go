package runner

import (
	"fmt"
	"io"
	"os"

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
		_, _ = io.Copy(out, master) // ends with EIO when the last slave fd closes
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
