package events

import (
	"encoding/binary"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// traceRecord builds a tracer record as trace.c writes it.
type traceRecord struct {
	nr           uint32
	errno        syscall.Errno
	path, base   string
	path2, base2 string
	flags        uint32
	family, typ  uint32
	proto        uint32
	addr         []byte
	port         uint16
	args         [6]uint64
	pid          uint32
	comm         string
	cgroup       uint64
	op           uint32 // OpSyscall if 0
}

func (r traceRecord) encode(t testing.TB) []byte {
	var e eventsSbxTraceEvent
	e.Ev.Op = uint32(OpSyscall)
	if r.op != 0 {
		e.Ev.Op = r.op
	}
	e.Ev.Err = int32(r.errno)
	e.Ev.Pid = r.pid
	e.Ev.CgroupId = r.cgroup
	e.Ev.Flags = r.flags
	e.Ev.Family, e.Ev.SockType, e.Ev.Protocol, e.Ev.Port = r.family, r.typ, r.proto, r.port
	copy(e.Ev.Addr[:], r.addr)
	cbytes(e.Ev.Comm[:], r.comm)
	cbytes(e.Ev.Path[:], r.path)
	cbytes(e.Base[:], r.base)
	cbytes(e.Path2[:], r.path2)
	cbytes(e.Base2[:], r.base2)
	e.Nr, e.Args = r.nr, r.args
	b, err := binary.Append(nil, binary.NativeEndian, e)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeTraceEvent(t *testing.T) {
	for _, tc := range []struct {
		name             string
		rec              traceRecord
		op, target, tier string
		write            bool
	}{
		{"open absolute", traceRecord{nr: unix.SYS_OPENAT, errno: unix.EACCES, path: "/etc/shadow", base: ""},
			"open", "/etc/shadow", TierLandlock, false},
		{"open relative to cwd", traceRecord{nr: unix.SYS_OPENAT, errno: unix.EROFS, path: "sub/../f", base: "/ws", flags: unix.O_WRONLY | unix.O_CREAT},
			"open", "/ws/f", TierMount, true},
		{"open relative, directory unknown", traceRecord{nr: unix.SYS_OPEN, errno: unix.EACCES, path: "f"},
			"open", "f", TierLandlock, false},
		{"open read-only on a read-only mount", traceRecord{nr: unix.SYS_OPEN, errno: unix.EROFS, path: "/ws/f", flags: unix.O_RDONLY},
			"open", "/ws/f", TierMount, false},
		{"openat2", traceRecord{nr: unix.SYS_OPENAT2, errno: unix.EROFS, path: "/ws/f", flags: unix.O_RDWR},
			"open", "/ws/f", TierMount, true},
		{"creat", traceRecord{nr: unix.SYS_CREAT, errno: unix.EROFS, path: "/ws/f"},
			"open", "/ws/f", TierMount, true},
		{"exec", traceRecord{nr: unix.SYS_EXECVE, errno: unix.EACCES, path: "/.sbx/sbx"},
			"exec", "/.sbx/sbx", TierLandlock, false},
		{"link", traceRecord{nr: unix.SYS_LINKAT, errno: unix.EXDEV, path: "/etc/passwd", path2: "p", base2: "/ws"},
			"link", "/etc/passwd -> /ws/p", TierLandlock, true},
		{"rename", traceRecord{nr: unix.SYS_RENAMEAT2, errno: unix.EROFS, path: "a", base: "/tmp", path2: "/ws/b"},
			"rename", "/tmp/a -> /ws/b", TierMount, true},
		{"symlink", traceRecord{nr: unix.SYS_SYMLINKAT, errno: unix.EROFS, path: "/ws/s"},
			"symlink", "/ws/s", TierMount, true},
		{"unlinkat", traceRecord{nr: unix.SYS_UNLINKAT, errno: unix.EACCES, path: "/etc/x"},
			"unlink", "/etc/x", TierLandlock, true},
		{"unlinkat AT_REMOVEDIR", traceRecord{nr: unix.SYS_UNLINKAT, errno: unix.EACCES, path: "/etc/d", flags: unix.AT_REMOVEDIR},
			"rmdir", "/etc/d", TierLandlock, true},
		{"mkdir", traceRecord{nr: unix.SYS_MKDIR, errno: unix.EROFS, path: "/usr/x"},
			"mkdir", "/usr/x", TierMount, true},
		{"truncate", traceRecord{nr: unix.SYS_TRUNCATE, errno: unix.EACCES, path: "/etc/x"},
			"truncate", "/etc/x", TierLandlock, true},
		{"socket of another family", traceRecord{nr: unix.SYS_SOCKET, errno: unix.EPERM, family: unix.AF_NETLINK, typ: unix.SOCK_RAW},
			"socket", "AF_NETLINK SOCK_RAW", TierSeccomp, false},
		{"raw inet socket", traceRecord{nr: unix.SYS_SOCKET, errno: unix.EPERM, family: unix.AF_INET, typ: unix.SOCK_RAW, proto: 1},
			"socket", "AF_INET SOCK_RAW IPPROTO_ICMP", TierCapability, false},
		{"tcp connect (Landlock)", traceRecord{nr: unix.SYS_CONNECT, errno: unix.EACCES, family: unix.AF_INET, addr: []byte{127, 0, 0, 1}, port: 8080},
			"connect", "127.0.0.1:8080", TierLandlock, false},
		{"bind v6", traceRecord{nr: unix.SYS_BIND, errno: unix.EACCES, family: unix.AF_INET6, addr: []byte{15: 1}, port: 22},
			"bind", "[::1]:22", TierLandlock, false},
		{"abstract unix connect", traceRecord{nr: unix.SYS_CONNECT, errno: unix.EPERM, family: unix.AF_UNIX, path: "dbus", flags: 1},
			"connect", "@dbus", TierLandlock, false},
		{"unix sendto", traceRecord{nr: unix.SYS_SENDTO, errno: unix.EACCES, family: unix.AF_UNIX, path: "/run/x.sock"},
			"sendmsg", "/run/x.sock", TierLandlock, false},
		{"sendmsg without an address", traceRecord{nr: unix.SYS_SENDMSG, errno: unix.EACCES},
			"sendmsg", "(no address)", TierLandlock, false},
		{"seccomp deny list", traceRecord{nr: unix.SYS_IO_URING_SETUP, errno: unix.EPERM},
			"syscall", "io_uring_setup", TierSeccomp, false},
		{"seccomp ioctl", traceRecord{nr: unix.SYS_IOCTL, errno: unix.EPERM, args: [6]uint64{0, unix.TIOCSTI}},
			"syscall", "ioctl 0x5412", TierSeccomp, false},
		{"open refused otherwise", traceRecord{nr: unix.SYS_OPEN, errno: unix.EPERM, path: "/x"},
			"open", "/x", TierKernel, false},
		// Set-id modes: seccomp's EPERM (sandbox/seccomp.go setIDRules).
		{"chmod setuid", traceRecord{nr: unix.SYS_CHMOD, errno: unix.EPERM, path: "/ws/sh", args: [6]uint64{0, 0o4755}},
			"chmod", "/ws/sh mode 04755", TierSeccomp, true},
		{"fchmod setgid", traceRecord{nr: unix.SYS_FCHMOD, errno: unix.EPERM, args: [6]uint64{3, 0o2711}},
			"chmod", "fd 3 mode 02711", TierSeccomp, true},
		{"fchmodat2 both", traceRecord{nr: unix.SYS_FCHMODAT2, errno: unix.EPERM, path: "/ws/x",
			args: [6]uint64{1<<32 - 100, 0, 0o6755, unix.AT_SYMLINK_NOFOLLOW}}, "chmod", "/ws/x mode 06755", TierSeccomp, true},
		{"chmod refused otherwise", traceRecord{nr: unix.SYS_CHMOD, errno: unix.EPERM, path: "/etc/x", args: [6]uint64{0, 0o644}},
			"chmod", "/etc/x", TierKernel, true},
		{"chmod on a read-only mount", traceRecord{nr: unix.SYS_FCHMODAT, errno: unix.EROFS, path: "/usr/x", args: [6]uint64{0, 0, 0o4755}},
			"chmod", "/usr/x", TierMount, true},
		{"openat O_CREAT setuid", traceRecord{nr: unix.SYS_OPENAT, errno: unix.EPERM, path: "/ws/f", flags: unix.O_WRONLY | unix.O_CREAT,
			args: [6]uint64{0, 0, unix.O_WRONLY | unix.O_CREAT, 0o4755}}, "open", "/ws/f mode 04755", TierSeccomp, true},
		{"open O_TMPFILE setgid", traceRecord{nr: unix.SYS_OPEN, errno: unix.EPERM, path: "/ws", flags: unix.O_RDWR | unix.O_TMPFILE,
			args: [6]uint64{0, unix.O_RDWR | unix.O_TMPFILE, 0o2700}}, "open", "/ws mode 02700", TierSeccomp, true},
		{"open without O_CREAT, set-id mode ignored", traceRecord{nr: unix.SYS_OPEN, errno: unix.EPERM, path: "/x",
			args: [6]uint64{0, unix.O_RDONLY, 0o4755}}, "open", "/x", TierKernel, false},
		{"creat setgid", traceRecord{nr: unix.SYS_CREAT, errno: unix.EPERM, path: "/ws/g", args: [6]uint64{0, 0o2755}},
			"open", "/ws/g mode 02755", TierSeccomp, true},
		{"mknod regular setuid", traceRecord{nr: unix.SYS_MKNOD, errno: unix.EPERM, path: "/ws/n", args: [6]uint64{0, unix.S_IFREG | 0o4755}},
			"mknod", "/ws/n mode 04755", TierSeccomp, true},
		{"mknod device", traceRecord{nr: unix.SYS_MKNODAT, errno: unix.EPERM, path: "/ws/d", args: [6]uint64{0, 0, unix.S_IFCHR | 0o600, 0x103}},
			"mknod", "/ws/d", TierKernel, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.rec.pid, tc.rec.comm, tc.rec.cgroup = 42, "prog", 7
			e, err := DecodeEvent(tc.rec.encode(t))
			if err != nil {
				t.Fatal(err)
			}
			if e.Op != OpSyscall || e.Syscall == nil || e.Syscall.Nr != tc.rec.nr || e.Errno != tc.rec.errno || e.PID != 42 || e.Comm != "prog" || e.CgroupID != 7 {
				t.Errorf("decoded %+v", e)
			}
			if e.OpName() != tc.op || e.Target() != tc.target || e.Tier != tc.tier || e.IsWrite() != tc.write {
				t.Errorf("op %q target %q tier %q write %v, want %q %q %q %v", e.OpName(), e.Target(), e.Tier, e.IsWrite(), tc.op, tc.target, tc.tier, tc.write)
			}
			want := "denied " + tc.op + " " + tc.target + " (42 prog)"
			if e.String() != want {
				t.Errorf("String() = %q, want %q", e.String(), want)
			}
		})
	}
}

func TestDecodeTraceEventErrors(t *testing.T) {
	good := traceRecord{nr: unix.SYS_OPEN, errno: unix.EACCES, path: "/x"}.encode(t)
	for _, tc := range []struct {
		name string
		raw  []byte
		want string
	}{
		{"short", good[:len(good)-1], "bytes, want"},
		{"untraced syscall", traceRecord{nr: unix.SYS_GETPID}.encode(t), "is not traced"},
		{"not a tracer event", traceRecord{nr: unix.SYS_OPEN, op: uint32(OpFileOpen)}.encode(t), "want 64"},
	} {
		if _, err := DecodeTraceEvent(tc.raw); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	// Through DecodeEvent, a short tracer record is an error, not a
	// common event.
	if _, err := DecodeEvent(good[:eventSize]); err == nil {
		t.Error("DecodeEvent of a truncated tracer record: no error")
	}
}

// TestTraceTableMatchesProgram: the table's argument positions are within
// the six syscall arguments, every row names what it reads, and the
// generated layout matches what trace.c writes.
func TestTraceTableMatchesProgram(t *testing.T) {
	if len(traceSyscalls) == 0 {
		t.Skip("the tracer is x86_64 only")
	}
	for nr, s := range traceSyscalls {
		if nr >= 512 {
			t.Errorf("%s: number %d beyond the program's table (512)", s.name, nr)
		}
		for _, a := range []uint8{s.sys.Path, s.sys.Dirfd, s.sys.Path2, s.sys.Dirfd2, s.sys.Flags, s.sys.Addr} {
			if a > 6 {
				t.Errorf("%s: argument %d of 6", s.name, a)
			}
		}
		if s.sys.Errs == 0 || s.name == "" || s.op == "" {
			t.Errorf("%s: incomplete row %+v", s.name, s)
		}
		if (s.sys.Dirfd != 0 && s.sys.Path == 0) || (s.sys.Dirfd2 != 0 && s.sys.Path2 == 0) {
			t.Errorf("%s: a dirfd without its path", s.name)
		}
	}
	if traceEventSize != 1352 {
		t.Logf("struct sbx_trace_event is %d bytes", traceEventSize)
	}
}

func FuzzDecodeTraceEvent(f *testing.F) {
	f.Add(traceRecord{nr: unix.SYS_OPENAT, errno: unix.EROFS, path: "f", base: "/ws"}.encode(f))
	f.Add(traceRecord{nr: unix.SYS_CONNECT, errno: unix.EACCES, family: unix.AF_INET, addr: []byte{127, 0, 0, 1}, port: 1}.encode(f))
	f.Add(traceRecord{nr: unix.SYS_IOCTL, errno: unix.EPERM}.encode(f))
	f.Fuzz(func(t *testing.T, raw []byte) {
		e, err := DecodeTraceEvent(raw)
		if err != nil {
			return
		}
		if s := e.String(); !strings.HasPrefix(s, "denied "+e.OpName()) {
			t.Errorf("String() = %q", s)
		}
		if e.Tier == "" || e.Syscall == nil {
			t.Errorf("tracer event without tier or syscall: %+v", e)
		}
		_ = e.IsWrite()
	})
}
