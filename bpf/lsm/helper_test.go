package lsm

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/bpf/internal/bpftest"
)

// The LSM tests run real processes: the test binary re-executed in helper
// mode (TestHelperLSMProcess), started directly in the sandbox cgroup or,
// as the control, outside it. The helper tries one operation and prints
// "ok" or the errno's name.

const lsmHelperEnv = "SBX_LSM_TEST_HELPER"

// lsmHelper runs the helper with args, in cgroup (a cgroup2 directory; ""
// for the test's own cgroup); files become fds 3, 4, ... It returns the
// helper's answer and pid.
func lsmHelper(t testing.TB, cgroup string, files []*os.File, args ...string) (string, int) {
	t.Helper()
	cmd := lsmHelperCmd(t, cgroup, files, args...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper %v: %v (output %q)", args, err, out)
	}
	return strings.TrimSpace(string(out)), cmd.Process.Pid
}

func lsmHelperCmd(t testing.TB, cgroup string, files []*os.File, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, append([]string{"-test.run=^TestHelperLSMProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), lsmHelperEnv+"=1")
	cmd.ExtraFiles = files
	cmd.Stderr = os.Stderr
	if cgroup != "" {
		fd, err := unix.Open(cgroup, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	}
	return cmd
}

// TestHelperLSMProcess is not a test: it is the child of lsmHelper.
func TestHelperLSMProcess(t *testing.T) {
	if os.Getenv(lsmHelperEnv) != "1" {
		t.Skip("helper process for the LSM tests")
	}
	fmt.Println(lsmRunHelper(bpftest.HelperArgs()))
	os.Exit(0)
}

var openModes = map[string]int{
	"r":     unix.O_RDONLY,
	"w":     unix.O_WRONLY,
	"rw":    unix.O_RDWR,
	"trunc": unix.O_RDONLY | unix.O_TRUNC,
	"creat": unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL,
}

func helperAtoi(s string) int {
	v, err := strconv.Atoi(s)
	if err != nil {
		panic(err)
	}
	return v
}

func ioctlPtr(fd int, req uint, arg unsafe.Pointer) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg))
	if e != 0 {
		return e
	}
	return nil
}

// lsmRunHelper performs one operation:
//
//	open PATH MODE        open(2) with MODE r, w, rw, trunc or creat
//	procfd PATH           open PATH with O_PATH, then reopen /proc/self/fd/N
//	pipefd                reopen a pipe's read end through /proc/self/fd
//	exec PATH             execve PATH (answers only if it fails)
//	link OLD NEW | rename OLD NEW | unlink P | mkdir P | truncate P | chmod P
//	tiocsti FD | tioclinux FD
//	kill PID              SIGTERM PID
//	killchild             start a helper child (sleep) and SIGKILL it
//	ptrace PID            PTRACE_ATTACH PID
//	sleep                 sleep a minute
//	socket FAMILY TYPE    create a socket
//	connect FD PORT       connect a passed-in socket to 127.0.0.1:PORT
//	sendto FD PORT        send one datagram to 127.0.0.1:PORT
//	dial ADDR:PORT        connect a new TCP socket to ADDR:PORT, send a byte
//	tcp PORT              connect a new TCP socket to 127.0.0.1:PORT, send a byte
//	send FD               send a byte on a passed-in connected socket
//	unix PATH             connect a new unix stream socket to PATH
//	unixdgram PATH        send a datagram to the unix socket PATH
//	unixself DIR          listen on DIR/self.sock, connect to it
//	netns MODE ARGS...    MODE in a new network namespace (of this thread)
//	bpf                   BPF_MAP_CREATE an array
//	mount DIR             mount a tmpfs on DIR (and unmount it)
//	umount DIR            unmount DIR
//	uring PATH            open PATH read-only through io_uring, in a worker
func lsmRunHelper(args []string) string {
	switch args[0] {
	case "uring":
		return bpftest.ErrName(uringOpen(args[1]))
	case "open":
		fd, err := unix.Open(args[1], openModes[args[2]]|unix.O_CLOEXEC, 0o644)
		if err == nil {
			unix.Close(fd)
		}
		return bpftest.ErrName(err)
	case "procfd":
		pfd, err := unix.Open(args[1], unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return "O_PATH: " + bpftest.ErrName(err)
		}
		fd, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", pfd), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		return bpftest.ErrName(err)
	case "pipefd":
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			return "pipe: " + bpftest.ErrName(err)
		}
		fd, err := unix.Open(fmt.Sprintf("/proc/self/fd/%d", p[0]), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
		}
		return bpftest.ErrName(err)
	case "exec":
		err := unix.Exec(args[1], []string{args[1], "true"}, nil)
		return bpftest.ErrName(err)
	case "link":
		return bpftest.ErrName(unix.Link(args[1], args[2]))
	case "rename":
		return bpftest.ErrName(unix.Rename(args[1], args[2]))
	case "unlink":
		return bpftest.ErrName(unix.Unlink(args[1]))
	case "mkdir":
		return bpftest.ErrName(unix.Mkdir(args[1], 0o755))
	case "truncate":
		return bpftest.ErrName(unix.Truncate(args[1], 0))
	case "chmod":
		return bpftest.ErrName(unix.Chmod(args[1], 0o600))
	case "tiocsti":
		c := byte('x')
		return bpftest.ErrName(ioctlPtr(helperAtoi(args[1]), unix.TIOCSTI, unsafe.Pointer(&c)))
	case "tioclinux":
		sub := byte(6) // TIOCL_GETSHIFTSTATE
		return bpftest.ErrName(ioctlPtr(helperAtoi(args[1]), unix.TIOCLINUX, unsafe.Pointer(&sub)))
	case "kill":
		return bpftest.ErrName(unix.Kill(helperAtoi(args[1]), unix.SIGTERM))
	case "killchild":
		exe, err := os.Executable()
		if err != nil {
			return err.Error()
		}
		cmd := exec.Command(exe, "-test.run=^TestHelperLSMProcess$", "--", "sleep")
		if err := cmd.Start(); err != nil {
			return "start child: " + err.Error()
		}
		err = unix.Kill(cmd.Process.Pid, unix.SIGKILL)
		cmd.Wait()
		return bpftest.ErrName(err)
	case "ptrace":
		runtime.LockOSThread()
		return bpftest.ErrName(unix.PtraceAttach(helperAtoi(args[1])))
	case "sleep":
		time.Sleep(time.Minute)
		return "slept"
	case "socket":
		fd, err := unix.Socket(helperAtoi(args[1]), helperAtoi(args[2]), 0)
		if err == nil {
			unix.Close(fd)
		}
		return bpftest.ErrName(err)
	case "connect", "sendto":
		sa := &unix.SockaddrInet4{Port: helperAtoi(args[2]), Addr: [4]byte{127, 0, 0, 1}}
		if args[0] == "connect" {
			return bpftest.ErrName(unix.Connect(helperAtoi(args[1]), sa))
		}
		return bpftest.ErrName(unix.Sendto(helperAtoi(args[1]), []byte("x"), 0, sa))
	case "tcp":
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return "socket: " + bpftest.ErrName(err)
		}
		defer unix.Close(fd)
		sa := &unix.SockaddrInet4{Port: helperAtoi(args[1]), Addr: [4]byte{127, 0, 0, 1}}
		if err := unix.Connect(fd, sa); err != nil {
			return "connect: " + bpftest.ErrName(err)
		}
		_, err = unix.Write(fd, []byte("x"))
		return bpftest.ErrName(err)
	case "dial":
		ap := netip.MustParseAddrPort(args[1])
		family := unix.AF_INET6
		var sa unix.Sockaddr = &unix.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}
		if ap.Addr().Is4() {
			family, sa = unix.AF_INET, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
		}
		fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return "socket: " + bpftest.ErrName(err)
		}
		defer unix.Close(fd)
		if err := unix.Connect(fd, sa); err != nil {
			return "connect: " + bpftest.ErrName(err)
		}
		_, err = unix.Write(fd, []byte("x"))
		return bpftest.ErrName(err)
	case "send":
		_, err := unix.Write(helperAtoi(args[1]), []byte("x"))
		return bpftest.ErrName(err)
	case "unix", "unixdgram":
		typ := unix.SOCK_STREAM
		if args[0] == "unixdgram" {
			typ = unix.SOCK_DGRAM
		}
		fd, err := unix.Socket(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return "socket: " + bpftest.ErrName(err)
		}
		defer unix.Close(fd)
		sa := &unix.SockaddrUnix{Name: args[1]}
		if typ == unix.SOCK_DGRAM {
			return bpftest.ErrName(unix.Sendto(fd, []byte("x"), 0, sa))
		}
		return bpftest.ErrName(unix.Connect(fd, sa))
	case "unixself":
		path := filepath.Join(args[1], "self.sock")
		os.Remove(path)
		ln, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return "socket: " + bpftest.ErrName(err)
		}
		defer unix.Close(ln)
		if err := unix.Bind(ln, &unix.SockaddrUnix{Name: path}); err != nil {
			return "bind: " + bpftest.ErrName(err)
		}
		if err := unix.Listen(ln, 1); err != nil {
			return "listen: " + bpftest.ErrName(err)
		}
		return lsmRunHelper([]string{"unix", path})
	case "netns":
		runtime.LockOSThread() // the namespace is this thread's
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return "unshare: " + bpftest.ErrName(err)
		}
		return lsmRunHelper(args[1:])
	case "bpf":
		// union bpf_attr for BPF_MAP_CREATE: type, key size, value size,
		// max entries.
		attr := [4]uint32{unix.BPF_MAP_TYPE_ARRAY, 4, 4, 1}
		fd, _, e := unix.Syscall(unix.SYS_BPF, unix.BPF_MAP_CREATE, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
		if e != 0 {
			return bpftest.ErrName(e)
		}
		unix.Close(int(fd))
		return "ok"
	case "umount":
		return bpftest.ErrName(unix.Unmount(args[1], 0))
	case "mount":
		if err := unix.Mount("tmpfs", args[1], "tmpfs", 0, ""); err != nil {
			return bpftest.ErrName(err)
		}
		return bpftest.ErrName(unix.Unmount(args[1], 0))
	}
	return "bad helper mode " + args[0]
}

// uringOpen opens path with an io_uring IORING_OP_OPENAT forced to an
// io-wq worker thread (IOSQE_ASYNC), the kernel thread that does the work
// on the task's behalf, and closes the result.
func uringOpen(path string) error {
	const (
		sysSetup      = 425
		sysEnter      = 426
		offSQRing     = 0
		offCQRing     = 0x8000000
		offSQEs       = 0x10000000
		opOpenat      = 18
		sqeAsync      = 1 << 4
		enterGetEvent = 1
	)
	// struct io_uring_params: 7 u32, resv[3], sq_off (10 u32 incl. a u64),
	// cq_off (same size).
	var params [30]uint32
	fd, _, e := unix.Syscall(sysSetup, 4, uintptr(unsafe.Pointer(&params)), 0)
	if e != 0 {
		return fmt.Errorf("io_uring_setup: %w", e)
	}
	defer unix.Close(int(fd))
	sqEntries, cqEntries := params[0], params[1]
	sqOff, cqOff := params[10:20], params[20:30]
	sq, err := unix.Mmap(int(fd), offSQRing, int(sqOff[6]+sqEntries*4), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("mmap sq ring: %w", err)
	}
	defer unix.Munmap(sq)
	cq, err := unix.Mmap(int(fd), offCQRing, int(cqOff[5]+cqEntries*16), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("mmap cq ring: %w", err)
	}
	defer unix.Munmap(cq)
	sqes, err := unix.Mmap(int(fd), offSQEs, int(sqEntries*64), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("mmap sqes: %w", err)
	}
	defer unix.Munmap(sqes)

	name, err := unix.BytePtrFromString(path)
	if err != nil {
		return err
	}
	sqe := sqes[:64]
	clear(sqe)
	sqe[0] = opOpenat
	sqe[1] = sqeAsync
	atFDCWD := int32(unix.AT_FDCWD)
	*(*int32)(unsafe.Pointer(&sqe[4])) = atFDCWD
	*(*uint64)(unsafe.Pointer(&sqe[16])) = uint64(uintptr(unsafe.Pointer(name)))
	*(*uint32)(unsafe.Pointer(&sqe[28])) = unix.O_RDONLY | unix.O_CLOEXEC
	u32 := func(b []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&b[off])) }
	tail := u32(sq, sqOff[1])
	mask := *u32(sq, sqOff[2])
	*u32(sq, sqOff[6]+(*tail&mask)*4) = 0
	atomic.AddUint32(tail, 1)
	_, _, e = unix.Syscall6(sysEnter, fd, 1, 1, enterGetEvent, 0, 0)
	runtime.KeepAlive(name)
	if e != 0 {
		return fmt.Errorf("io_uring_enter: %w", e)
	}
	head := u32(cq, cqOff[0])
	if atomic.LoadUint32(u32(cq, cqOff[1])) == atomic.LoadUint32(head) {
		return errors.New("io_uring: no completion")
	}
	cqe := cq[cqOff[5]+(*head&*u32(cq, cqOff[2]))*16:]
	res := *(*int32)(unsafe.Pointer(&cqe[8]))
	atomic.AddUint32(head, 1)
	if res < 0 {
		return syscall.Errno(-res)
	}
	return unix.Close(int(res))
}
