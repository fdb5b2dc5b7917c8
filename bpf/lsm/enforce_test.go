package lsm

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/bpf"
	"github.com/sbx-sandbox/sbx/bpf/events"
	"github.com/sbx-sandbox/sbx/bpf/internal/bpftest"
	"github.com/sbx-sandbox/sbx/internal/cgroup2"
)

// lsmEnv is a sandbox cgroup registered with an LSM whose policy allows the
// test binary's directory and ro/ read-only, ws/ (the workspace) read-write,
// the test's procfs and /dev/null; out/ is outside the policy.
type lsmEnv struct {
	lsm    *LSM
	events *events.Reader
	cgroup string
	id     uint64
	ws     string
	ro     string
	out    string
	list   string // list-only (AllowList), with the file list/f below
}

// newLSMEnv loads the LSM programs (private, not pinned) and registers a
// fresh sandbox cgroup. Everything is removed at cleanup.
func newLSMEnv(t *testing.T) *lsmEnv {
	t.Helper()
	requireLSM(t)
	mnt, err := cgroup2.Mount()
	if err != nil {
		t.Fatal(err)
	}
	e := &lsmEnv{cgroup: bpftest.CgroupDir(t, filepath.Join(mnt, fmt.Sprintf("sbx-lsm-test-%d", os.Getpid())))}
	if e.id, err = bpf.CgroupID(e.cgroup); err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	e.ws, e.ro, e.out = filepath.Join(base, "ws"), filepath.Join(base, "ro"), filepath.Join(base, "out")
	e.list = filepath.Join(base, "list")
	for _, d := range []string{e.ws, e.ro, e.out, e.list} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	if e.lsm, err = Open(nil); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Logf("Open (load, verify, attach, self-test): %v", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() {
		if err := e.lsm.Close(); err != nil {
			t.Errorf("close lsm: %v", err)
		}
	})
	if e.events, err = e.lsm.Events(e.id); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.events.Close() })

	var p FilePolicy
	p.Allow(filepath.Dir(exe), false).
		Allow(e.ro, false).
		Allow(e.ws, true).
		Allow("/dev/null", true).
		AllowList(e.list).
		AllowFilesystem("/proc", false)
	if err := e.lsm.AddSandbox(e.id, p); err != nil {
		t.Fatalf("AddSandbox: %v", err)
	}
	t.Cleanup(func() {
		if err := e.lsm.RemoveSandbox(e.id); err != nil {
			t.Errorf("RemoveSandbox: %v", err)
		}
	})
	return e
}

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// wantEvent reads the sandbox's events until one of op from pid whose path
// satisfies match arrives (other events, such as the Go runtime's denied
// startup reads, are skipped), and returns it.
func (e *lsmEnv) wantEvent(t *testing.T, op events.Op, pid int, match func(events.Event) bool) events.Event {
	t.Helper()
	e.events.SetDeadline(time.Now().Add(5 * time.Second))
	defer e.events.SetDeadline(time.Time{})
	var seen []string
	for {
		ev, err := e.events.Read()
		if err != nil {
			t.Fatalf("no %s event from pid %d (%v); saw %q", op, pid, err, seen)
		}
		if ev.Op == op && int(ev.PID) == pid && match(ev) {
			if ev.CgroupID != e.id {
				t.Errorf("event cgroup %d, want %d", ev.CgroupID, e.id)
			}
			return ev
		}
		seen = append(seen, fmt.Sprintf("%s %s (%d)", ev.Op, ev.Path, ev.PID))
	}
}

// pathIs matches events whose path is p.
func pathIs(p string) func(events.Event) bool {
	return func(ev events.Event) bool { return ev.Path == p }
}

// lsmCase is one operation, denied in the sandbox (in) and allowed outside
// (out). setup prepares fresh files and returns the helper's arguments;
// check, if set, runs after the denied attempt (the file is unchanged).
type lsmCase struct {
	name   string
	setup  func(t *testing.T, e *lsmEnv) []string
	files  func(t *testing.T) []*os.File
	in     string
	out    string
	op     events.Op
	path   func(e *lsmEnv) string // the event's path; nil: check no path
	errno  unix.Errno
	flags  func(ev events.Event) bool
	check  func(t *testing.T, e *lsmEnv)
	target func(t *testing.T) (pid int, alive func() bool)
	nested bool // run in a cgroup below the sandbox's
}

// File policy denials return EACCES; all other denials EPERM.
func TestLSMEnforce(t *testing.T) {
	e := newLSMEnv(t)
	secret := func(e *lsmEnv) string { return filepath.Join(e.out, "secret") }
	cases := []lsmCase{{
		name: "read outside",
		setup: func(t *testing.T, e *lsmEnv) []string {
			writeFile(t, secret(e), "s")
			return []string{"open", secret(e), "r"}
		},
		in: "EACCES", out: "ok", op: events.OpFileOpen, path: secret, errno: unix.EACCES,
	}, {
		name: "read below a list-only directory",
		setup: func(t *testing.T, e *lsmEnv) []string {
			writeFile(t, filepath.Join(e.list, "f"), "s")
			return []string{"open", filepath.Join(e.list, "f"), "r"}
		},
		in: "EACCES", out: "ok", op: events.OpFileOpen, path: func(e *lsmEnv) string { return filepath.Join(e.list, "f") }, errno: unix.EACCES,
	}, {
		name: "symlink in workspace pointing out",
		setup: func(t *testing.T, e *lsmEnv) []string {
			writeFile(t, secret(e), "s")
			link := filepath.Join(e.ws, "link")
			os.Remove(link)
			if err := os.Symlink(secret(e), link); err != nil {
				t.Fatal(err)
			}
			return []string{"open", link, "r"}
		},
		in: "EACCES", out: "ok", op: events.OpFileOpen, path: secret, errno: unix.EACCES,
	}, {
		name: "proc self root",
		setup: func(t *testing.T, e *lsmEnv) []string {
			writeFile(t, secret(e), "s")
			return []string{"open", "/proc/self/root" + secret(e), "r"}
		},
		in: "EACCES", out: "ok", op: events.OpFileOpen, path: secret, errno: unix.EACCES,
	}, {
		name: "proc self fd of an O_PATH descriptor",
		setup: func(t *testing.T, e *lsmEnv) []string {
			writeFile(t, secret(e), "s")
			return []string{"procfd", secret(e)}
		},
		in: "EACCES", out: "ok", op: events.OpFileOpen, path: secret, errno: unix.EACCES,
	}, {
		name: "io_uring openat in a kernel worker",
		setup: func(t *testing.T, e *lsmEnv) []string {
			writeFile(t, secret(e), "s")
			return []string{"uring", secret(e)}
		},
		in: "EACCES", out: "ok", op: events.OpFileOpen, path: secret, errno: unix.EACCES,
	}, {
		name: "read outside from a nested cgroup",
		setup: func(t *testing.T, e *lsmEnv) []string {
			writeFile(t, secret(e), "s")
			return []string{"open", secret(e), "r"}
		},
		nested: true,
		in:     "EACCES", out: "ok", op: events.OpFileOpen, path: secret, errno: unix.EACCES,
	}, {
		name: "exec outside",
		setup: func(t *testing.T, e *lsmEnv) []string {
			if _, err := os.Stat("/bin/true"); err != nil {
				t.Fatalf("need /bin/true: %v", err)
			}
			return []string{"exec", "/bin/true"}
		},
		// The control's exec succeeds and prints nothing.
		in: "EACCES", out: "", op: events.OpFileOpen, errno: unix.EACCES,
		path: func(*lsmEnv) string { p, _ := filepath.EvalSymlinks("/bin/true"); return p },
	}, {
		name: "write open of a read-only file",
		setup: func(t *testing.T, e *lsmEnv) []string {
			return []string{"open", writeFile(t, filepath.Join(e.ro, "file"), "ro"), "w"}
		},
		in: "EACCES", out: "ok", op: events.OpFileOpen, errno: unix.EACCES,
		path:  func(e *lsmEnv) string { return filepath.Join(e.ro, "file") },
		flags: func(ev events.Event) bool { return ev.Flags&unix.O_ACCMODE == unix.O_WRONLY },
	}, {
		name: "O_TRUNC of a read-only file",
		setup: func(t *testing.T, e *lsmEnv) []string {
			return []string{"open", writeFile(t, filepath.Join(e.ro, "trunc"), "keep"), "trunc"}
		},
		in: "EACCES", out: "ok", op: events.OpFileOpen, errno: unix.EACCES,
		path:  func(e *lsmEnv) string { return filepath.Join(e.ro, "trunc") },
		flags: func(ev events.Event) bool { return ev.Flags&unix.O_TRUNC != 0 },
		check: func(t *testing.T, e *lsmEnv) { wantContent(t, filepath.Join(e.ro, "trunc"), "keep") },
	}, {
		name: "truncate(2) of a read-only file",
		setup: func(t *testing.T, e *lsmEnv) []string {
			return []string{"truncate", writeFile(t, filepath.Join(e.ro, "trunc2"), "keep")}
		},
		in: "EACCES", out: "ok", op: events.OpPathTruncate, errno: unix.EACCES,
		path:  func(e *lsmEnv) string { return filepath.Join(e.ro, "trunc2") },
		check: func(t *testing.T, e *lsmEnv) { wantContent(t, filepath.Join(e.ro, "trunc2"), "keep") },
	}, {
		name: "O_CREAT outside",
		setup: func(t *testing.T, e *lsmEnv) []string {
			os.Remove(filepath.Join(e.out, "new"))
			return []string{"open", filepath.Join(e.out, "new"), "creat"}
		},
		in: "EACCES", out: "ok", op: events.OpInodeCreate, errno: unix.EACCES,
		path:  func(e *lsmEnv) string { return filepath.Join(e.out, "new") },
		check: func(t *testing.T, e *lsmEnv) { wantAbsent(t, filepath.Join(e.out, "new")) },
	}, {
		name: "O_CREAT in a read-only directory",
		setup: func(t *testing.T, e *lsmEnv) []string {
			os.Remove(filepath.Join(e.ro, "new"))
			return []string{"open", filepath.Join(e.ro, "new"), "creat"}
		},
		in: "EACCES", out: "ok", op: events.OpInodeCreate, errno: unix.EACCES,
		path:  func(e *lsmEnv) string { return filepath.Join(e.ro, "new") },
		check: func(t *testing.T, e *lsmEnv) { wantAbsent(t, filepath.Join(e.ro, "new")) },
	}, {
		name: "mkdir outside",
		setup: func(t *testing.T, e *lsmEnv) []string {
			os.Remove(filepath.Join(e.out, "dir"))
			return []string{"mkdir", filepath.Join(e.out, "dir")}
		},
		in: "EACCES", out: "ok", op: events.OpInodeCreate, errno: unix.EACCES,
		path:  func(e *lsmEnv) string { return filepath.Join(e.out, "dir") },
		check: func(t *testing.T, e *lsmEnv) { wantAbsent(t, filepath.Join(e.out, "dir")) },
	}, {
		name: "unlink outside",
		setup: func(t *testing.T, e *lsmEnv) []string {
			return []string{"unlink", writeFile(t, filepath.Join(e.out, "victim"), "v")}
		},
		in: "EACCES", out: "ok", op: events.OpPathUnlink, errno: unix.EACCES,
		path:  func(e *lsmEnv) string { return filepath.Join(e.out, "victim") },
		check: func(t *testing.T, e *lsmEnv) { wantContent(t, filepath.Join(e.out, "victim"), "v") },
	}, {
		name: "chmod outside",
		setup: func(t *testing.T, e *lsmEnv) []string {
			return []string{"chmod", writeFile(t, filepath.Join(e.out, "mode"), "m")}
		},
		in: "EACCES", out: "ok", op: events.OpPathSetattr, errno: unix.EACCES,
		path: func(e *lsmEnv) string { return filepath.Join(e.out, "mode") },
	}, {
		name: "hardlink of an outside file into the workspace",
		setup: func(t *testing.T, e *lsmEnv) []string {
			writeFile(t, secret(e), "s")
			os.Remove(filepath.Join(e.ws, "hardlink"))
			return []string{"link", secret(e), filepath.Join(e.ws, "hardlink")}
		},
		in: "EACCES", out: "ok", op: events.OpPathLink, path: secret, errno: unix.EACCES,
		check: func(t *testing.T, e *lsmEnv) { wantAbsent(t, filepath.Join(e.ws, "hardlink")) },
	}, {
		name: "rename out of the workspace",
		setup: func(t *testing.T, e *lsmEnv) []string {
			os.Remove(filepath.Join(e.out, "moved"))
			return []string{"rename", writeFile(t, filepath.Join(e.ws, "tomove"), "m"), filepath.Join(e.out, "moved")}
		},
		in: "EACCES", out: "ok", op: events.OpPathRename, errno: unix.EACCES,
		path: func(e *lsmEnv) string { return filepath.Join(e.ws, "tomove") },
		check: func(t *testing.T, e *lsmEnv) {
			wantContent(t, filepath.Join(e.ws, "tomove"), "m")
			wantAbsent(t, filepath.Join(e.out, "moved"))
		},
	}, {
		name: "rename into the workspace",
		setup: func(t *testing.T, e *lsmEnv) []string {
			os.Remove(filepath.Join(e.ws, "stolen"))
			return []string{"rename", writeFile(t, filepath.Join(e.out, "tosteal"), "s"), filepath.Join(e.ws, "stolen")}
		},
		in: "EACCES", out: "ok", op: events.OpPathRename, errno: unix.EACCES,
		path:  func(e *lsmEnv) string { return filepath.Join(e.out, "tosteal") },
		check: func(t *testing.T, e *lsmEnv) { wantAbsent(t, filepath.Join(e.ws, "stolen")) },
	}, {
		name:  "TIOCSTI on a pty",
		setup: func(t *testing.T, e *lsmEnv) []string { return []string{"tiocsti", "3"} },
		files: ptySlave,
		in:    "EPERM", out: "ok", op: events.OpFileIoctl, errno: unix.EPERM,
		flags: func(ev events.Event) bool { return ev.Flags == unix.TIOCSTI && strings.HasPrefix(ev.Path, "/dev/pts/") },
	}, {
		name:  "TIOCLINUX on a pty",
		setup: func(t *testing.T, e *lsmEnv) []string { return []string{"tioclinux", "3"} },
		files: ptySlave,
		// Outside, the ioctl reaches the tty layer, which has no console to
		// answer for a pty: anything but the LSM's EPERM will do.
		in: "EPERM", out: "!EPERM", op: events.OpFileIoctl, errno: unix.EPERM,
		flags: func(ev events.Event) bool { return ev.Flags == unix.TIOCLINUX },
	}, {
		name:   "kill a process outside the sandbox",
		target: outsideSleeper,
		in:     "EPERM", out: "ok", op: events.OpTaskKill, errno: unix.EPERM,
		flags: func(ev events.Event) bool { return ev.Flags == uint32(unix.SIGTERM) },
	}, {
		name:   "ptrace a process outside the sandbox",
		target: outsideSleeper,
		in:     "EPERM", out: "ok", op: events.OpPtrace, errno: unix.EPERM,
	}, {
		name:  "socket AF_INET",
		setup: func(t *testing.T, e *lsmEnv) []string { return []string{"socket", "2", "1"} },
		in:    "EPERM", out: "ok", op: events.OpSocketCreate, errno: unix.EPERM,
		flags: func(ev events.Event) bool { return ev.Family == unix.AF_INET && ev.SockType == unix.SOCK_STREAM },
	}, {
		name:  "socket AF_NETLINK",
		setup: func(t *testing.T, e *lsmEnv) []string { return []string{"socket", "16", "3"} },
		in:    "EPERM", out: "ok", op: events.OpSocketCreate, errno: unix.EPERM,
		flags: func(ev events.Event) bool { return ev.Family == unix.AF_NETLINK },
	}, {
		name:  "connect of an inherited UDP socket",
		setup: func(t *testing.T, e *lsmEnv) []string { return []string{"connect", "3", strconv.Itoa(udpListener(t))} },
		files: inetSocket,
		in:    "EPERM", out: "ok", op: events.OpSocketConnect, errno: unix.EPERM,
		flags: func(ev events.Event) bool { return ev.Family == unix.AF_INET && ev.SockType == unix.SOCK_DGRAM },
	}, {
		name:  "sendto on an inherited UDP socket",
		setup: func(t *testing.T, e *lsmEnv) []string { return []string{"sendto", "3", strconv.Itoa(udpListener(t))} },
		files: inetSocket,
		in:    "EPERM", out: "ok", op: events.OpSendmsg4, errno: unix.EPERM,
		flags: func(ev events.Event) bool { return ev.Family == unix.AF_INET && ev.Addr.Addr().String() == "127.0.0.1" },
	}, {
		name:  "bpf(2)",
		setup: func(t *testing.T, e *lsmEnv) []string { return []string{"bpf"} },
		in:    "EPERM", out: "ok", op: events.OpBPF, errno: unix.EPERM,
		flags: func(ev events.Event) bool { return ev.Flags == unix.BPF_MAP_CREATE },
	}, {
		name:  "mount",
		setup: func(t *testing.T, e *lsmEnv) []string { return []string{"mount", e.ws} },
		in:    "EPERM", out: "ok", op: events.OpSbMount, errno: unix.EPERM,
		path: func(e *lsmEnv) string { return e.ws },
	}, {
		name: "umount",
		setup: func(t *testing.T, e *lsmEnv) []string {
			dir := filepath.Join(e.out, "mnt")
			os.Mkdir(dir, 0o755)
			if err := unix.Mount("tmpfs", dir, "tmpfs", 0, ""); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
			return []string{"umount", dir}
		},
		in: "EPERM", out: "ok", op: events.OpSbMount, errno: unix.EPERM,
		path:  func(e *lsmEnv) string { return filepath.Join(e.out, "mnt") },
		flags: func(ev events.Event) bool { return ev.Flags == uint32(lsmSbxMountKindSBX_MOUNT_UMOUNT) },
	}}

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var args []string
			var alive func() bool
			if c.target != nil {
				pid, a := c.target(t)
				alive = a
				verb := "kill"
				if c.op == events.OpPtrace {
					verb = "ptrace"
				}
				args = []string{verb, strconv.Itoa(pid)}
			} else {
				args = c.setup(t, e)
			}
			var files []*os.File
			if c.files != nil {
				files = c.files(t)
			}
			cg := e.cgroup
			if c.nested {
				cg = bpftest.CgroupDir(t, filepath.Join(e.cgroup, "nested"))
			}
			got, pid := lsmHelper(t, cg, files, args...)
			if got != c.in {
				t.Fatalf("in the sandbox: %v = %q, want %q", args, got, c.in)
			}
			ev := e.wantEvent(t, c.op, pid, func(ev events.Event) bool {
				if c.path != nil && ev.Path != c.path(e) {
					return false
				}
				return c.flags == nil || c.flags(ev)
			})
			if ev.Errno != c.errno {
				t.Errorf("event errno %v, want %v", ev.Errno, c.errno)
			}
			if c.check != nil {
				c.check(t, e)
			}
			if alive != nil && !alive() {
				t.Errorf("the target died of a denied operation")
			}
			t.Logf("in: %s; event: %s %q flags %#x", got, ev.Op, ev.Path, ev.Flags)

			// The control: the same operation from outside the sandbox.
			got, _ = lsmHelper(t, "", files, args...)
			if c.out == "!EPERM" {
				if got == "EPERM" {
					t.Fatalf("outside the sandbox: %v = %q, want anything else", args, got)
				}
			} else if got != c.out {
				t.Fatalf("outside the sandbox: %v = %q, want %q", args, got, c.out)
			}
		})
	}

	allowed := []struct {
		name string
		args func(e *lsmEnv) []string
	}{
		{"create in the workspace", func(e *lsmEnv) []string {
			os.Remove(filepath.Join(e.ws, "new"))
			return []string{"open", filepath.Join(e.ws, "new"), "creat"}
		}},
		{"write in the workspace", func(e *lsmEnv) []string {
			return []string{"open", writeFile(t, filepath.Join(e.ws, "rw"), "x"), "rw"}
		}},
		{"read a read-only file", func(e *lsmEnv) []string {
			return []string{"open", writeFile(t, filepath.Join(e.ro, "read"), "x"), "r"}
		}},
		{"symlink in the workspace pointing in", func(e *lsmEnv) []string {
			link := filepath.Join(e.ws, "inlink")
			os.Remove(link)
			if err := os.Symlink(writeFile(t, filepath.Join(e.ws, "target"), "x"), link); err != nil {
				t.Fatal(err)
			}
			return []string{"open", link, "rw"}
		}},
		{"hardlink in the workspace", func(e *lsmEnv) []string {
			os.Remove(filepath.Join(e.ws, "hl2"))
			return []string{"link", writeFile(t, filepath.Join(e.ws, "hl1"), "x"), filepath.Join(e.ws, "hl2")}
		}},
		{"rename in the workspace", func(e *lsmEnv) []string {
			return []string{"rename", writeFile(t, filepath.Join(e.ws, "r1"), "x"), filepath.Join(e.ws, "r2")}
		}},
		{"unlink in the workspace", func(e *lsmEnv) []string {
			return []string{"unlink", writeFile(t, filepath.Join(e.ws, "gone"), "x")}
		}},
		{"own procfs", func(e *lsmEnv) []string { return []string{"open", "/proc/self/status", "r"} }},
		{"pipe through /proc/self/fd", func(e *lsmEnv) []string { return []string{"pipefd"} }},
		{"/dev/null", func(e *lsmEnv) []string { return []string{"open", "/dev/null", "w"} }},
		{"socket AF_UNIX", func(e *lsmEnv) []string { return []string{"socket", "1", "1"} }},
		{"kill of its own child", func(e *lsmEnv) []string { return []string{"killchild"} }},
	}
	for _, c := range allowed {
		t.Run(c.name, func(t *testing.T) {
			args := c.args(e)
			if got, _ := lsmHelper(t, e.cgroup, nil, args...); got != "ok" {
				t.Fatalf("in the sandbox: %v = %q, want ok", args, got)
			}
		})
	}

	t.Run("removed sandbox is unrestricted", func(t *testing.T) {
		writeFile(t, secret(e), "s")
		if err := e.lsm.RemoveSandbox(e.id); err != nil {
			t.Fatal(err)
		}
		if got, _ := lsmHelper(t, e.cgroup, nil, "open", secret(e), "r"); got != "ok" {
			t.Fatalf("after RemoveSandbox: open = %q, want ok", got)
		}
	})
}

func wantContent(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil || string(b) != want {
		t.Errorf("%s = %q, %v; want %q unchanged", path, b, err, want)
	}
}

func wantAbsent(t *testing.T, path string) {
	t.Helper()
	if exists(path) {
		t.Errorf("%s exists after a denied operation", path)
	}
}

// ptySlave opens a pty pair and returns its slave, closed at cleanup.
func ptySlave(t *testing.T) []*os.File {
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
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return []*os.File{s}
}

// inetSocket is an AF_INET UDP socket created outside the sandbox, as one
// that leaked in.
func inetSocket(t *testing.T) []*os.File {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "udp")
	t.Cleanup(func() { f.Close() })
	return []*os.File{f}
}

// udpListener listens on 127.0.0.1 and returns its port.
func udpListener(t *testing.T) int {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.LocalAddr().(*net.UDPAddr).Port
}

// outsideSleeper starts a helper that sleeps, outside the sandbox, and
// returns its pid and whether it is still alive. It is killed at cleanup.
func outsideSleeper(t *testing.T) (int, func() bool) {
	t.Helper()
	cmd := lsmHelperCmd(t, "", nil, "sleep")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
	})
	return cmd.Process.Pid, func() bool {
		select {
		case <-done:
			return false
		default:
			return true
		}
	}
}

// TestLSMListOnly: a list-only directory (the sandbox root, for "ls /") can
// be opened for reading in the sandbox, while a file below it cannot (a case
// of TestLSMEnforce) and an unlisted sibling directory cannot either.
func TestLSMListOnly(t *testing.T) {
	e := newLSMEnv(t)
	if got, _ := lsmHelper(t, e.cgroup, nil, "open", e.list, "r"); got != "ok" {
		t.Errorf("open the list-only directory %s in the sandbox: %s, want ok", e.list, got)
	}
	if got, _ := lsmHelper(t, e.cgroup, nil, "open", e.out, "r"); got != "EACCES" {
		t.Errorf("open the unlisted directory %s in the sandbox: %s, want EACCES", e.out, got)
	}
	if got, _ := lsmHelper(t, "", nil, "open", e.out, "r"); got != "ok" {
		t.Errorf("open %s outside the sandbox: %s, want ok", e.out, got)
	}
}
