package escape

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openPty returns the master and the slave of a new pty (neither becomes
// the test's controlling terminal).
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	// Non-canonical input, so that TIOCINQ counts a byte without a
	// newline after it.
	tio, err := unix.IoctlGetTermios(int(s.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tio.Lflag &^= unix.ICANON | unix.ECHO
	if err := unix.IoctlSetTermios(int(s.Fd()), unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
	return m, s
}

// pending is how many input bytes wait to be read on the terminal f.
func pending(t *testing.T, f *os.File) int {
	t.Helper()
	n, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCINQ)
	if err != nil {
		t.Fatalf("TIOCINQ: %v", err)
	}
	return n
}

// TestTerminalInjection: the program cannot type into the caller's
// terminal. TIOCSTI (push a byte into the terminal's input, so the
// caller's shell runs it after sbx exits; this kernel has
// dev.tty.legacy_tiocsti=1) and TIOCLINUX (console selection and paste)
// fail with EPERM from seccomp, also with bits 32-63 of the request set
// (the kernel ignores them; the filter compares the low 32 bits). With
// --tty never the program gets the caller's terminal itself, but in a
// session of its own (no controlling terminal: /dev/tty is ENXIO); with
// --tty always it gets a pty of the sandbox. The control injects into a
// pty from the host.
func TestTerminalInjection(t *testing.T) {
	b := newBox(t)
	attack := steps(step("isatty", "0"), step("tiocsti", "0"), step("tiocsti", "0", "high"),
		step("tioclinux", "0"), step("tioclinux", "0", "high"))
	want := map[string]string{
		"isatty(0)":         "INFO tty",
		"tiocsti(0)":        "EPERM",
		"tiocsti(0,high)":   "EPERM",
		"tioclinux(0)":      "EPERM",
		"tioclinux(0,high)": "EPERM",
	}
	t.Run("the caller's terminal (--tty never)", func(t *testing.T) {
		_, slave := openPty(t)
		r := b.in(t).sbx(opts{stdin: slave}, []string{"--tty", "never"},
			append([]string{b.attack}, append(attack, ";", "openrw", "/dev/tty")...)...)
		w := map[string]string{"openrw(/dev/tty)": "ENXIO"}
		for k, v := range want {
			w[k] = v
		}
		wantSteps(t, "in the sandbox", r, w)
		if r.code != 0 {
			t.Errorf("in the sandbox: exit %d, want 0\n%v", r.code, r)
		}
		if n := pending(t, slave); n != 0 {
			t.Errorf("%d bytes were pushed into the caller's terminal", n)
		}
	})
	t.Run("the sandbox's pty (--tty always)", func(t *testing.T) {
		_, slave := openPty(t)
		r := b.in(t).sbx(opts{stdin: slave}, []string{"--tty", "always"}, append([]string{b.attack}, attack...)...)
		// Through the pty: CRLF line ends, stdout and stderr merged.
		r.stdout = strings.ReplaceAll(r.stdout, "\r\n", "\n")
		wantSteps(t, "in the sandbox", r, want)
		if r.code != 0 {
			t.Errorf("in the sandbox: exit %d, want 0\n%v", r.code, r)
		}
	})
	t.Run("control", func(t *testing.T) {
		_, slave := openPty(t)
		c := b.in(t).attackHost(opts{stdin: slave}, "tiocsti", "0", ";", "tiocsti", "0", "high", ";", "tioclinux", "0")
		got := c.steps()
		if got["tiocsti(0)"] != "OK" || got["tiocsti(0,high)"] != "OK" || pending(t, slave) != 2 {
			t.Errorf("control: TIOCSTI on the host: want two bytes pushed\n%v", c)
		}
		// TIOCLINUX is for virtual consoles: a pty says ENOTTY, so the
		// sandbox's EPERM is the filter's.
		if got["tioclinux(0)"] == "EPERM" || got["tioclinux(0)"] == "OK" {
			t.Errorf("control: TIOCLINUX on a pty = %q, want the kernel's own error", got["tioclinux(0)"])
		}
	})
}
