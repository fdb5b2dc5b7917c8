package escape

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestProcAliases: /proc offers no way around the mounts. Host processes
// are not in the sandbox's PID namespace, so /proc/PID/root, cwd, environ
// and fd of a host process do not exist; /proc/self/root is the sandbox's
// own root (the masks hold through it). PID 1 is sbx's shim: it runs as
// the program's uid and is its parent, so unless it makes itself
// non-dumpable the program can open /proc/1/mem for writing (ptrace in all
// but name: seccomp refuses ptrace(2) itself), copy its descriptors with
// pidfd_getfd(2), and read its environment and root. The control runs the
// same steps on the host against the test process.
func TestProcAliases(t *testing.T) {
	b := newBox(t)
	self := strconv.Itoa(os.Getpid())
	hostSteps := func(pid string) [][]string {
		return [][]string{
			step("readlink", "/proc/"+pid+"/root"), step("readlink", "/proc/"+pid+"/cwd"),
			step("read", "/proc/"+pid+"/environ"), step("read", "/proc/"+pid+"/root/etc/hostname"),
			step("ls", "/proc/"+pid+"/fd"),
		}
	}
	t.Run("host processes", func(t *testing.T) {
		b := b.in(t)
		r := b.attackIn(nil, steps(append(hostSteps(self), step("pids"), step("read", "/proc/self/root/etc/shadow"))...)...)
		want := map[string]string{"read(/proc/self/root/etc/shadow)": "EMPTY"}
		for _, s := range hostSteps(self) {
			want[s[0]+"("+s[1]+")"] = "ENOENT"
		}
		wantSteps(t, "in the sandbox", r, want)
		// PID 1 (the shim) and the helper itself, nothing else.
		pids := strings.Split(strings.TrimPrefix(r.steps()["pids"], "INFO "), ",")
		if len(pids) != 2 || pids[0] != "1" {
			t.Errorf("pids in the sandbox = %q, want 1 and the helper's own\n%v", pids, r)
		}
		if r.code != 0 {
			t.Errorf("in the sandbox: exit %d, want 0\n%v", r.code, r)
		}
		c := b.attackHost(opts{}, steps(hostSteps(self)...)...)
		if c.code != escaped || c.steps()["read(/proc/"+self+"/environ)"] == "ENOENT" {
			t.Errorf("control: the host's /proc/%s\n%v", self, c)
		}
	})
	t.Run("PID 1", func(t *testing.T) {
		b := b.in(t)
		r := b.attackIn(nil, steps(
			step("openrw", "/proc/1/mem"), step("read", "/proc/1/environ"),
			step("readlink", "/proc/1/root"), step("readlink", "/proc/1/cwd"),
			step("read", "/proc/1/root/etc/hostname"), step("openw", "/proc/1/fd/3"),
			step("pidfd-getfd", "1", "3"), step("ptrace", "1"),
		)...)
		wantSteps(t, "in the sandbox", r, map[string]string{
			"openrw(/proc/1/mem)":             "EACCES",
			"read(/proc/1/environ)":           "EACCES",
			"readlink(/proc/1/root)":          "EACCES",
			"readlink(/proc/1/cwd)":           "EACCES",
			"read(/proc/1/root/etc/hostname)": "EACCES",
			"openw(/proc/1/fd/3)":             "EACCES", // the lifeline: see TestNoPersistence
			"pidfd-getfd(1,3)":                "EPERM",
			"ptrace(1)":                       "EPERM",
		})
		// Control: the same steps against a process of the host.
		c := b.attackHost(opts{}, steps(step("openrw", "/proc/"+self+"/mem"), step("pidfd-getfd", self, "0"))...)
		wantSteps(t, "control on the host", c, map[string]string{
			"openrw(/proc/" + self + "/mem)": "OK",
			"pidfd-getfd(" + self + ",0)":    "OK",
		})
	})
}

// TestSupervisor: the program can neither see nor touch the sbx process
// that supervises it: its pid does not exist in the sandbox (kill ESRCH,
// ptrace EPERM from seccomp), nor does the test's. PID 1, the shim, is
// visible but survives everything the program sends it: SIGKILL and
// SIGSTOP from inside a PID namespace do not reach its init, SIGTERM is
// forwarded back to the program, and kill(-1) spares init. Whatever it
// tried, sbx reports the program's own exit status.
func TestSupervisor(t *testing.T) {
	b := newBox(t)
	self := strconv.Itoa(os.Getpid())
	t.Run("sbx and the host", func(t *testing.T) {
		b := b.in(t)
		// The program reads sbx's pid from its stdin.
		stdin, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer stdin.Close()
		var sbxPid int
		o := opts{stdin: stdin, started: func(p *os.Process) {
			sbxPid = p.Pid
			fmt.Fprintf(w, "%d\n", p.Pid)
			w.Close()
		}}
		script := `read p; ./attack kill $p 0 ";" kill $p KILL ";" ptrace $p ";" kill ` + self +
			` 0 ";" ptrace ` + self + ` ";" ptrace 1 ";" pids; echo status $?; exit 7`
		r := b.sbx(o, nil, "sh", "-c", script)
		p := strconv.Itoa(sbxPid)
		wantSteps(t, "in the sandbox", r, map[string]string{
			"kill(" + p + ",0)":    "ESRCH",
			"kill(" + p + ",KILL)": "ESRCH",
			"ptrace(" + p + ")":    "EPERM",
			"kill(" + self + ",0)": "ESRCH",
			"ptrace(" + self + ")": "EPERM",
			"ptrace(1)":            "EPERM",
			"status":               "0",
		})
		if r.code != 7 {
			t.Errorf("sbx exit %d, want the program's 7\n%v", r.code, r)
		}
		// Control: on the host the helper attaches to a process of its
		// own uid and signals the test.
		sleep := exec.Command("sleep", "30")
		if err := sleep.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = sleep.Process.Kill(); _ = sleep.Wait() }()
		sp := strconv.Itoa(sleep.Process.Pid)
		c := b.attackHost(opts{}, steps(step("kill", self, "0"), step("ptrace", sp))...)
		wantSteps(t, "control on the host", c, map[string]string{"kill(" + self + ",0)": "INFO", "ptrace(" + sp + ")": "OK"})
	})
	t.Run("kill everything", func(t *testing.T) {
		b := b.in(t)
		// The helper is the program: killall skips only itself, so the
		// one other process it sees is PID 1.
		r := b.attackIn(nil, steps(step("killall", "KILL"), step("kill", "1", "KILL"), step("kill", "1", "STOP"),
			step("kill", "-1", "KILL"), step("pids"))...)
		got := r.steps()
		if got["killall(KILL)"] != "INFO 1:sent" || got["kill(1,KILL)"] != "INFO" || got["kill(1,STOP)"] != "INFO" || got["kill(-1,KILL)"] != "ESRCH" {
			t.Errorf("signals to PID 1 in the sandbox: want them taken (and ignored)\n%v", r)
		}
		if pids := strings.Split(strings.TrimPrefix(got["pids"], "INFO "), ","); len(pids) != 2 || pids[0] != "1" {
			t.Errorf("PID 1 did not survive SIGKILL and SIGSTOP from the program: pids %q\n%v", pids, r)
		}
		if r.code != 0 {
			t.Errorf("sbx exit %d, want the program's 0\n%v", r.code, r)
		}
	})
	t.Run("SIGTERM to PID 1", func(t *testing.T) {
		b := b.in(t)
		// The shim forwards SIGTERM to the program's group: the shell
		// traps it, the helper (waiting in hold for up to 10 s) dies of
		// it, the run goes on.
		r := b.sbx(opts{}, nil, "sh", "-c", `trap "echo shell got TERM" TERM; ./attack kill 1 TERM ";" hold /dev/null 10 waiter; echo helper $?; exit 5`)
		if r.code != 5 || !strings.Contains(r.stdout, "helper 143\n") || !strings.Contains(r.stdout, "shell got TERM\n") {
			t.Errorf("SIGTERM to PID 1: want it back at the program (helper 143), then sbx exit 5\n%v", r)
		}
	})
}

// TestHostIPC: System V IPC objects of the host (here a shared memory
// segment the test creates) do not exist in the sandbox's own IPC
// namespace, while the host attaches it.
func TestHostIPC(t *testing.T) {
	b := newBox(t)
	key := 0x5b780000 + os.Getpid()%0xffff
	id, err := unix.SysvShmGet(key, 4096, unix.IPC_CREAT|unix.IPC_EXCL|0o666)
	if err != nil {
		t.Fatalf("create a shared memory segment: %v", err)
	}
	t.Cleanup(func() { _, _ = unix.SysvShmCtl(id, unix.IPC_RMID, nil) })
	k := fmt.Sprintf("%#x", key)
	r := b.attackIn(nil, "shm", k)
	wantSteps(t, "in the sandbox", r, map[string]string{"shm(" + k + ")": "ENOENT"})
	c := b.attackHost(opts{}, "shm", k)
	wantSteps(t, "control on the host", c, map[string]string{"shm(" + k + ")": "OK"})
}
