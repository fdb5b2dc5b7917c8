package netwall

import (
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

	"github.com/sbx-sandbox/sbx/bpf"
	"github.com/sbx-sandbox/sbx/bpf/internal/bpftest"
	"github.com/sbx-sandbox/sbx/canary"
	"github.com/sbx-sandbox/sbx/internal/sbxtest"
)

// The tests run real processes inside a temporary cgroup: the test binary
// re-executed in helper mode (TestNetHelperProcess), which tries one
// operation and prints "ok" or the errno's name.

const helperEnv = "SBX_BPF_TEST_HELPER"

// netEnv is a wall on a temporary parent cgroup with one run cgroup in it,
// pinned in a test-only pin root. Everything is removed at cleanup.
type netEnv struct {
	net     *Wall
	pinRoot string
	parent  string
	run     string
	runID   uint64
}

// The fixtures of package bpftest, under the names these tests use.
func requireRoot(t testing.TB)                      { bpftest.RequireRoot(t) }
func newCgroupDir(t testing.TB, path string) string { return bpftest.CgroupDir(t, path) }
func newTestParent(t testing.TB) string             { return bpftest.Parent(t) }
func newPinRoot(t testing.TB) string                { return bpftest.PinRoot(t) }

// openTestNet opens a wall on parent with pins in pinRoot, closed at
// cleanup. It skips only if the kernel lacks cgroup BPF.
func openTestNet(t testing.TB, parent, pinRoot string) *Wall {
	t.Helper()
	n, err := Open(parent, &Options{PinRoot: pinRoot})
	if errors.Is(err, bpf.ErrNotSupported) {
		sbxtest.Skip(t, sbxtest.CgroupBPF, fmt.Sprintf("kernel lacks cgroup BPF: %v", err))
	}
	if err != nil {
		t.Fatalf("Open: %v", err)
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
	id, err := bpf.CgroupID(run)
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
	fmt.Println(runHelper(bpftest.HelperArgs()))
	os.Exit(0)
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
			return bpftest.ErrName(err)
		}
		defer unix.Close(fd)
		if args[0] == "udpsend" {
			return bpftest.ErrName(unix.Sendto(fd, []byte("x"), 0, sa))
		}
		return bpftest.ErrName(unix.Connect(fd, sa))
	case "socket":
		fd, err := unix.Socket(atoi(args[1]), atoi(args[2]), atoi(args[3]))
		if err == nil {
			unix.Close(fd)
		}
		return bpftest.ErrName(err)
	case "connect":
		return bpftest.ErrName(unix.Connect(atoi(args[1]), sockaddr(args[2])))
	case "sendto":
		return bpftest.ErrName(unix.Sendto(atoi(args[1]), []byte("x"), 0, sockaddr(args[2])))
	case "fastopen":
		return bpftest.ErrName(unix.Sendto(atoi(args[1]), []byte("x"), unix.MSG_FASTOPEN, sockaddr(args[2])))
	case "bind":
		return bpftest.ErrName(unix.Bind(atoi(args[1]), sockaddr(args[2])))
	case "sockets":
		var err error
		for i := 0; i < atoi(args[1]); i++ {
			var fd int
			if fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0); err == nil {
				unix.Close(fd)
			}
		}
		return bpftest.ErrName(err)
	case "reader":
		n, err := Open(args[1], &Options{PinRoot: args[2]})
		if err != nil {
			return err.Error()
		}
		r, err := n.Events(uint64(atoi(args[3])))
		if err != nil {
			return err.Error()
		}
		slot, _ := r.Slot()
		return itoa(int(slot))
	case "canary":
		return bpftest.ErrName(canary.Net())
	case "loopback-canary":
		return bpftest.ErrName(canary.Loopback(true))
	}
	return "bad helper mode " + args[0]
}

func itoa(v int) string { return strconv.Itoa(v) }
