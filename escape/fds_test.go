package escape

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestInheritedFds: descriptors sbx inherits (a host file outside the
// workspace, one end of a connected unix socket pair, a listening TCP
// socket and an unconnected UDP socket of the host's network) never reach
// the program. An inherited socket would keep working whatever the walls
// say (no cgroup hook runs for send, recv or accept on a connected or
// listening socket), which is why sbx closes them.
func TestInheritedFds(t *testing.T) {
	b := newBox(t)
	secret := filepath.Join(t.TempDir(), "secret")
	writeFile(t, secret, "host secret\n", 0o600)
	file, err := os.Open(secret)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "ours"), os.NewFile(uintptr(pair[1]), "theirs")
	defer ours.Close()
	defer theirs.Close()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	tcpFile, err := tcp.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer tcpFile.Close()
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	udpFile, err := udp.(*net.UDPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	defer udpFile.Close()
	o := opts{extraFiles: []*os.File{file, theirs, tcpFile, udpFile}} // fds 3..6

	r := b.sbx(o, nil, b.attack, "fds", ";", "read", "/dev/fd/3", ";", "read", "/proc/self/fd/4")
	wantSteps(t, "in the sandbox", r, map[string]string{
		"fds":                   "EBADF",
		"read(/dev/fd/3)":       "ENOENT",
		"read(/proc/self/fd/4)": "ENOENT",
	})
	if r.code != 0 {
		t.Errorf("in the sandbox: exit %d, want 0 (nothing got through)\n%v", r.code, r)
	}
	// Control: the helper started directly by the test holds all four
	// and reads the host file through fd 3.
	// (The test may inherit more from its own parent: any fd without
	// FD_CLOEXEC goes on to children, which is the point.)
	c := b.attackHost(o, "fds", ";", "read", "/dev/fd/3")
	if fds := c.steps()["fds"]; !strings.HasPrefix(fds+",", "OK 3,4,5,6,") {
		t.Errorf("control on the host: fds = %q, want OK 3,4,5,6...", fds)
	}
	wantSteps(t, "control on the host", c, map[string]string{"read(/dev/fd/3)": "OK 12"})
	if c.code != escaped {
		t.Errorf("control: exit %d, want %d\n%v", c.code, escaped, c)
	}
}

// TestSCMRights: a descriptor can only arrive by SCM_RIGHTS over a unix
// socket that reaches a host process, and none does: a host server that
// hands every client an open host file is out of reach both at a path
// (not mounted in the sandbox) and in the abstract namespace (which
// belongs to the network namespace), while a host client gets the file.
func TestSCMRights(t *testing.T) {
	b := newBox(t)
	secret := filepath.Join(t.TempDir(), "secret")
	writeFile(t, secret, "host secret\n", 0o600)
	dir := hostOnlyDir(t)
	path := filepath.Join(dir, "fd-server.sock")
	abstract := "@" + unique("sbx-escape-scm")
	for _, addr := range []string{path, abstract} {
		serveFD(t, addr, secret)
	}
	r := b.attackIn(nil, steps(step("scm", path), step("scm", abstract))...)
	wantSteps(t, "in the sandbox", r, map[string]string{
		"scm(" + path + ")":     "ENOENT",
		"scm(" + abstract + ")": "ECONNREFUSED",
	})
	if r.code != 0 {
		t.Errorf("in the sandbox: exit %d, want 0\n%v", r.code, r)
	}
	c := b.attackHost(opts{}, steps(step("scm", path), step("scm", abstract))...)
	wantSteps(t, "control on the host", c, map[string]string{
		"scm(" + path + ")":     "OK 12",
		"scm(" + abstract + ")": "OK 12",
	})
	if c.code != escaped {
		t.Errorf("control: exit %d, want %d\n%v", c.code, escaped, c)
	}
}

// hostOnlyDir returns a fresh directory under the host's /run, which the
// sandbox does not show.
func hostOnlyDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/run", "sbx-escape-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// listenUnix listens on a unix socket at a path or @abstract, closed at
// the end of the test.
func listenUnix(t *testing.T, addr string) *net.UnixListener {
	t.Helper()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	if !strings.HasPrefix(addr, "@") {
		if err := os.Chmod(addr, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// serveFD serves addr: every client gets an open descriptor of file by
// SCM_RIGHTS.
func serveFD(t *testing.T, addr, file string) {
	l := listenUnix(t, addr)
	go func() {
		for {
			c, err := l.AcceptUnix()
			if err != nil {
				return
			}
			f, err := os.Open(file)
			if err == nil {
				_, _, _ = c.WriteMsgUnix([]byte{'x'}, unix.UnixRights(int(f.Fd())), nil)
				f.Close()
			}
			c.Close()
		}
	}()
}

// serveAccept serves addr by accepting and closing every connection.
func serveAccept(t *testing.T, addr string) {
	l := listenUnix(t, addr)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
}
