package tracer

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/bpf"
	"github.com/sbx-sandbox/sbx/bpf/events"
	"github.com/sbx-sandbox/sbx/bpf/pin"
	"github.com/sbx-sandbox/sbx/internal/sbxtest"
)

// traceEnv is a wall and a tracer on a temporary parent cgroup, with the
// run's ring registered and the tracer attached.
type traceEnv struct {
	*netEnv
	trace  *Tracer
	use    *Use
	reader *events.Reader
}

func newTraceEnv(t testing.TB) *traceEnv {
	t.Helper()
	env := &traceEnv{netEnv: newNetEnv(t)}
	tr, err := Open(env.parent, env.net.EventMaps(), &Options{PinRoot: env.pinRoot})
	if errors.Is(err, bpf.ErrNotSupported) {
		t.Skipf("kernel cannot run the tracer: %v", err)
	}
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { tr.Close() })
	env.trace = tr
	if env.use, err = tr.Acquire(); err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	t.Cleanup(func() { env.use.Release() })
	if env.reader, err = env.net.Events(env.runID); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.reader.Close() })
	return env
}

// nobodyPython runs python3 code as nobody in cgroup (the test's own if
// ""), in dir, and returns its output.
func nobodyPython(t *testing.T, cgroup, dir, code string) string {
	t.Helper()
	py, err := exec.LookPath("/usr/bin/python3")
	if err != nil {
		sbxtest.Skip(t, sbxtest.Python3, fmt.Sprintf("needs python3: %v", err))
	}
	cmd := exec.Command(py, "-c", code)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if cgroup != "" {
		fd, err := unix.Open(cgroup, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -c %q: %v\n%s", code, err, out)
	}
	return strings.TrimSpace(string(out))
}

// drainEvents returns the events queued in r.
func drainEvents(t *testing.T, r *events.Reader) []events.Event {
	t.Helper()
	r.SetDeadline(time.Now().Add(100 * time.Millisecond))
	var out []events.Event
	for {
		e, err := r.Read()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return out
		}
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		out = append(out, e)
	}
}

// tracePrelude defines try(), which prints the errno name of a call.
const tracePrelude = `
import ctypes, errno, os, socket
libc = ctypes.CDLL(None, use_errno=True)
def try_(f):
    try:
        f()
        print("ok")
    except OSError as e:
        print(errno.errorcode[e.errno])
def mount():
    if libc.mount(b"none", b"/mnt", b"tmpfs", 0, None) != 0:
        raise OSError(ctypes.get_errno(), "mount")
`

// TestTraceReportsRefusals: refusals of a process in a run cgroup (here
// the permission checks a process of uid nobody meets; the attribution to
// a tier is decided from the syscall and errno alone) are reported with
// the syscall's operation, its target (relative paths made absolute, by
// cwd and by dirfd) and errno. The same process in a cgroup outside the
// parent is not reported.
func TestTraceReportsRefusals(t *testing.T) {
	env := newTraceEnv(t)
	code := tracePrelude + `
try_(lambda: open("/etc/shadow"))
try_(lambda: open("shadow"))
try_(lambda: os.open("shadow", os.O_RDONLY, dir_fd=os.open("/etc", os.O_RDONLY)))
try_(lambda: os.mkdir("/etc/sbx-trace-test"))
try_(lambda: os.rename("/etc/hostname", "sbx-trace-test"))
try_(lambda: mount())
try_(lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
`
	want := []struct{ res, op, target, errno, tier string }{
		{"EACCES", "open", "/etc/shadow", "EACCES", events.TierLandlock},
		{"EACCES", "open", "/etc/shadow", "EACCES", events.TierLandlock},
		{"EACCES", "open", "/etc/shadow", "EACCES", events.TierLandlock},
		{"EACCES", "mkdir", "/etc/sbx-trace-test", "EACCES", events.TierLandlock},
		{"EACCES", "rename", "/etc/hostname -> /etc/sbx-trace-test", "EACCES", events.TierLandlock},
		{"EPERM", "syscall", "mount", "EPERM", events.TierSeccomp},
		{"EPERM", "socket", "AF_INET SOCK_RAW IPPROTO_ICMP", "EPERM", events.TierCapability},
	}
	out := strings.Fields(nobodyPython(t, env.run, "/etc", code))
	if len(out) != len(want) {
		t.Fatalf("python printed %q, want %d results", out, len(want))
	}
	for i, w := range want {
		if out[i] != w.res {
			t.Errorf("step %d (%s %s) = %s, want %s", i, w.op, w.target, out[i], w.res)
		}
	}
	got := drainEvents(t, env.reader)
	var ours []events.Event
	for _, e := range got {
		// Python's own start-up may meet refusals too (none expected).
		if e.Op == events.OpSyscall {
			ours = append(ours, e)
		}
	}
	if len(ours) != len(want) {
		for _, e := range got {
			t.Logf("event: %s errno %s tier %s", e, unix.ErrnoName(e.Errno), e.Tier)
		}
		t.Fatalf("%d tracer events, want %d", len(ours), len(want))
	}
	for i, w := range want {
		e := ours[i]
		if e.OpName() != w.op || e.Target() != w.target || unix.ErrnoName(e.Errno) != w.errno || e.Tier != w.tier || e.Comm != "python3" || e.CgroupID != env.runID {
			t.Errorf("event %d = %s errno %s tier %s cgroup %d, want %s %s errno %s tier %s (python3, cgroup %d)",
				i, e, unix.ErrnoName(e.Errno), e.Tier, e.CgroupID, w.op, w.target, w.errno, w.tier, env.runID)
		}
	}

	// Control: the same refusals outside the parent cgroup are not the
	// tracer's business (nothing is routed, nothing counted).
	before, err := events.Unrouted(env.net.EventMaps())
	if err != nil {
		t.Fatal(err)
	}
	nobodyPython(t, "", "/etc", code)
	if got := drainEvents(t, env.reader); len(got) != 0 {
		t.Errorf("refusals outside the parent cgroup were reported: %v", got)
	}
	if after, _ := events.Unrouted(env.net.EventMaps()); after != before {
		t.Errorf("refusals outside the parent cgroup were counted as unrouted (%d -> %d)", before, after)
	}
}

// TestTraceAttachedWhileUsed: the tracer is attached while at least one
// use is held, across holders, and detached by the last release; a holder
// that died (an unlocked holder directory) does not keep it attached.
func TestTraceAttachedWhileUsed(t *testing.T) {
	env := newTraceEnv(t)
	if !env.trace.Attached() {
		t.Fatal("not attached while a use is held")
	}
	u2, err := env.trace.Acquire()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(env.trace.PinDir(), "users", "u-dead"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := u2.Release(); err != nil {
		t.Fatal(err)
	}
	if !env.trace.Attached() {
		t.Fatal("detached while another use is held")
	}
	if err := env.use.Release(); err != nil {
		t.Fatal(err)
	}
	if env.trace.Attached() {
		t.Fatal("still attached after the last release")
	}
	if _, err := os.Stat(filepath.Join(env.trace.PinDir(), "users", "u-dead")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dead holder's directory left behind: %v", err)
	}
	// Detached, a refusal in the run is not reported.
	nobodyPython(t, env.run, "/", tracePrelude+`try_(lambda: open("/etc/shadow"))`)
	if got := drainEvents(t, env.reader); len(got) != 0 {
		t.Errorf("events while detached: %v", got)
	}
	// And attached again by the next use.
	u3, err := env.trace.Acquire()
	if err != nil {
		t.Fatal(err)
	}
	defer u3.Release()
	nobodyPython(t, env.run, "/", tracePrelude+`try_(lambda: open("/etc/shadow"))`)
	if got := drainEvents(t, env.reader); len(got) != 1 || got[0].Target() != "/etc/shadow" {
		t.Errorf("events after re-attach: %v, want the one open", got)
	}
}

// TestTracePinsKeptWhileUsed: another build's tracer, loading, removes the
// pins of tracers no run uses, never those of one in use (which made the
// using build attach a second copy at its next run, and report each of its
// runs' denials twice); once the last use is released they go.
func TestTracePinsKeptWhileUsed(t *testing.T) {
	env := newTraceEnv(t)
	dir := env.trace.PinDir()
	stale := filepath.Join(env.pinRoot, "trace-stale")
	if err := os.Mkdir(stale, 0o700); err != nil {
		t.Fatal(err)
	}
	other := func() { // what another build's Open does, cold
		lock, err := pin.LockRoot(env.pinRoot)
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Unlock()
		if err := pin.RemoveOthers(env.pinRoot, "trace-", "trace-otherbuild"); err != nil {
			t.Fatal(err)
		}
	}
	other()
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the pins of a tracer in use were removed: %v", err)
	}
	if !env.trace.Attached() {
		t.Fatal("the tracer in use was detached")
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an unused tracer's pins stayed: %v", err)
	}
	if err := env.use.Release(); err != nil {
		t.Fatal(err)
	}
	other()
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the pins stayed after the last use: %v", err)
	}
}
