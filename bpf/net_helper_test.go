package bpf

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/bpf/pin"
	"github.com/sbx-sandbox/sbx/canary"
)

// The tests run real processes inside a temporary cgroup: the test binary
// re-executed in helper mode (TestNetHelperProcess), which tries one
// operation and prints "ok" or the errno's name.

const helperEnv = "SBX_BPF_TEST_HELPER"

// netEnv is a wall on a temporary parent cgroup with one run cgroup in it,
// pinned in a test-only pin root. Everything is removed at cleanup.
type netEnv struct {
	net     *Net
	pinRoot string
	parent  string
	run     string
	runID   uint64
}

// requireRoot skips when the test cannot have the privileges cgroup BPF
// needs.
func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (cgroup BPF, bpffs, cgroup2 writes)")
	}
}

func randName(t testing.TB) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

// newCgroupDir creates a cgroup2 directory that is removed at cleanup.
func newCgroupDir(t testing.TB, path string) string {
	t.Helper()
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatalf("create cgroup: %v", err)
	}
	t.Cleanup(func() {
		if err := os.Remove(path); err != nil {
			t.Errorf("remove cgroup %s: %v", path, err)
		}
	})
	return path
}

// newTestParent creates a temporary parent cgroup under the cgroup2 mount.
// It skips only when the host has no cgroup2.
func newTestParent(t testing.TB) string {
	t.Helper()
	requireRoot(t)
	mnt, err := Cgroup2Mount()
	if errors.Is(err, ErrNotSupported) {
		t.Skipf("no cgroup2 on this host: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return newCgroupDir(t, filepath.Join(mnt, "sbx-test-"+randName(t)))
}

// newPinRoot returns a test-only pin root on bpffs, removed at cleanup.
func newPinRoot(t testing.TB) string {
	t.Helper()
	if err := pin.Mount(); err != nil {
		t.Fatalf("mount bpffs: %v", err)
	}
	root := filepath.Join(pin.BPFFS, "sbx-test-"+randName(t))
	t.Cleanup(func() {
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			if err := pin.RemoveDir(filepath.Join(root, e.Name())); err != nil {
				t.Errorf("remove pins: %v", err)
			}
		}
		if err := os.Remove(root); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("remove pin root: %v", err)
		}
	})
	return root
}

// openTestNet opens a wall on parent with pins in pinRoot, closed at
// cleanup. It skips only if the kernel lacks cgroup BPF.
func openTestNet(t testing.TB, parent, pinRoot string) *Net {
	t.Helper()
	n, err := OpenNet(parent, &NetOptions{PinRoot: pinRoot})
	if errors.Is(err, ErrNotSupported) {
		t.Skipf("kernel lacks cgroup BPF: %v", err)
	}
	if err != nil {
		t.Fatalf("OpenNet: %v", err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return n
}

func newNetEnv(t testing.TB) *netEnv {
	t.Helper()
	parent := newTestParent(t)
	pinRoot := newPinRoot(t)
	run := newCgroupDir(t, filepath.Join(parent, "run"))
	n := openTestNet(t, parent, pinRoot)
	t.Cleanup(func() {
		if err := n.Unpin(); err != nil {
			t.Errorf("unpin: %v", err)
		}
	})
	id, err := CgroupID(run)
	if err != nil {
		t.Fatal(err)
	}
	return &netEnv{net: n, pinRoot: pinRoot, parent: parent, run: run, runID: id}
}

// helper runs the test binary in helper mode with args. With cgroup set,
// the child starts directly in that cgroup (clone3 CLONE_INTO_CGROUP), as
// a sandbox's first task does; files become fds 3, 4, ... It returns the
// child's one-line answer and its pid.
func helper(t testing.TB, cgroup string, files []*os.File, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestNetHelperProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	cmd.ExtraFiles = files
	cmd.Stderr = os.Stderr
	if cgroup != "" {
		fd, err := unix.Open(cgroup, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper %v: %v (output %q)", args, err, out)
	}
	return strings.TrimSpace(string(out)), cmd.Process.Pid
}

// TestNetHelperProcess is not a test: it is the child of helper.
func TestNetHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		return
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	fmt.Println(runHelper(args))
	os.Exit(0)
}

func errName(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	return err.Error()
}

func atoi(s string) int {
	v, err := strconv.Atoi(s)
	if err != nil {
		panic(err)
	}
	return v
}

func sockaddr(s string) unix.Sockaddr {
	ap := netip.MustParseAddrPort(s)
	if ap.Addr().Is4() {
		return &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	}
	return &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
}

// runHelper performs one operation:
//
//	socket FAMILY TYPE PROTO   create a socket
//	connect FD ADDR:PORT       connect a passed-in socket
//	sendto FD ADDR:PORT        send one datagram on a passed-in socket
//	fastopen FD ADDR:PORT      TCP Fast Open sendto on a passed-in socket
//	bind FD ADDR:PORT          bind a passed-in socket
//	dial ADDR:PORT             create a TCP socket and connect it
//	udpsend ADDR:PORT          create a UDP socket and send one datagram
//	sockets N                  try N AF_INET sockets, answer the last errno
//	reader PARENT PINROOT ID   open the wall and a reader for run ID, then
//	                           exit without closing it; answer its slot
//	canary                     run Canary
//	loopback-canary            run canary.Loopback(true)
func runHelper(args []string) string {
	switch args[0] {
	case "dial", "udpsend":
		sa := sockaddr(args[1])
		family, typ := unix.AF_INET, unix.SOCK_STREAM
		if _, ok := sa.(*unix.SockaddrInet6); ok {
			family = unix.AF_INET6
		}
		if args[0] == "udpsend" {
			typ = unix.SOCK_DGRAM
		}
		fd, err := unix.Socket(family, typ, 0)
		if err != nil {
			return errName(err)
		}
		defer unix.Close(fd)
		if args[0] == "udpsend" {
			return errName(unix.Sendto(fd, []byte("x"), 0, sa))
		}
		return errName(unix.Connect(fd, sa))
	case "socket":
		fd, err := unix.Socket(atoi(args[1]), atoi(args[2]), atoi(args[3]))
		if err == nil {
			unix.Close(fd)
		}
		return errName(err)
	case "connect":
		return errName(unix.Connect(atoi(args[1]), sockaddr(args[2])))
	case "sendto":
		return errName(unix.Sendto(atoi(args[1]), []byte("x"), 0, sockaddr(args[2])))
	case "fastopen":
		return errName(unix.Sendto(atoi(args[1]), []byte("x"), unix.MSG_FASTOPEN, sockaddr(args[2])))
	case "bind":
		return errName(unix.Bind(atoi(args[1]), sockaddr(args[2])))
	case "sockets":
		var err error
		for i := 0; i < atoi(args[1]); i++ {
			var fd int
			if fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0); err == nil {
				unix.Close(fd)
			}
		}
		return errName(err)
	case "reader":
		n, err := OpenNet(args[1], &NetOptions{PinRoot: args[2]})
		if err != nil {
			return err.Error()
		}
		r, err := n.Events(uint64(atoi(args[3])))
		if err != nil {
			return err.Error()
		}
		return itoa(int(r.slot.index))
	case "canary":
		return errName(canary.Net())
	case "loopback-canary":
		return errName(canary.Loopback(true))
	}
	return "bad helper mode " + args[0]
}

func itoa(v int) string { return strconv.Itoa(v) }
