package escape

import (
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestOpenByHandle: file handles bypass every path check (the 2014
// "shocker" breakout opened the host's root through a forged handle of
// inode 2). name_to_handle_at and open_by_handle_at fail with EPERM
// (seccomp; without CAP_DAC_READ_SEARCH the kernel would refuse too).
func TestOpenByHandle(t *testing.T) {
	b := newBox(t)
	attack := steps(step("open-by-handle", "/etc/passwd"), step("shocker", "/etc"), step("shocker", b.ws))
	r := b.attackIn(nil, attack...)
	wantSteps(t, "in the sandbox", r, map[string]string{
		"open-by-handle(/etc/passwd)": "EPERM",
		"shocker(/etc)":               "EPERM",
		"shocker(" + b.ws + ")":       "EPERM",
	})
	if r.code != 0 {
		t.Errorf("in the sandbox: exit %d, want 0\n%v", r.code, r)
	}
	c := b.attackHost(opts{}, attack...)
	wantSteps(t, "control on the host", c, map[string]string{
		"open-by-handle(/etc/passwd)": "OK",
		"shocker(/etc)":               "OK", // the root of /etc's file system
	})
}

// TestIOUring: io_uring runs operations (openat, connect, ...) that seccomp
// never sees, so the ring itself cannot be set up: EPERM.
func TestIOUring(t *testing.T) {
	b := newBox(t)
	if data, err := os.ReadFile("/proc/sys/kernel/io_uring_disabled"); err == nil && strings.TrimSpace(string(data)) == "2" {
		t.Log("io_uring is disabled on this host (kernel.io_uring_disabled=2): the control cannot succeed")
	}
	r := b.attackIn(nil, "io_uring")
	wantSteps(t, "in the sandbox", r, map[string]string{"io_uring": "EPERM"})
	if r.code != 0 {
		t.Errorf("in the sandbox: exit %d, want 0\n%v", r.code, r)
	}
	c := b.attackHost(opts{}, "io_uring")
	wantSteps(t, "control on the host", c, map[string]string{"io_uring": "OK"})
}

// TestMountAndUserns: no new namespaces (a user namespace would give the
// program capabilities over new mounts), no mounts by either mount API,
// no chroot, no setns (not even into its own network namespace). The real unshare(1) fails the
// same way. The control runs the raw steps on the host in a private
// mount namespace, so its mounts touch nothing.
func TestMountAndUserns(t *testing.T) {
	b := newBox(t)
	var attack [][]string
	want := map[string]string{}
	for _, ns := range []string{"user", "mount", "net", "pid", "ipc", "uts", "cgroup", "time"} {
		attack = append(attack, step("unshare", ns))
		want["unshare("+ns+")"] = "EPERM"
	}
	more := [][]string{
		step("clone-user"), step("mount", "tmpfs", "/tmp"), step("mount", "proc", "/tmp"),
		step("mount", "cgroup2", "/tmp"), step("bind", "/", "/tmp"), step("fsopen", "tmpfs"),
		step("open-tree", "/"), step("setns", "/proc/self/ns/net"), step("chroot", "/"),
	}
	for _, s := range more {
		attack = append(attack, s)
		want[s[0]+label(s[1:])] = "EPERM"
	}
	r := b.attackIn(nil, steps(attack...)...)
	wantSteps(t, "in the sandbox", r, want)
	if r.code != 0 {
		t.Errorf("in the sandbox: exit %d, want 0\n%v", r.code, r)
	}
	u := b.sbx(opts{}, nil, "unshare", "-U", "-m", "-r", "true")
	if u.code != 1 || !strings.Contains(u.stderr, "Operation not permitted") {
		t.Errorf("unshare(1) -Urm in the sandbox: want EPERM\n%v", u)
	}
	cwant := map[string]string{}
	for k := range want {
		cwant[k] = "OK"
	}
	c := b.attackHost(opts{sys: &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}}, steps(attack...)...)
	wantSteps(t, "control on the host", c, cwant)
}

// label is the helper's "(a,b)" for step arguments.
func label(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return "(" + strings.Join(args, ",") + ")"
}

// TestProcSysAndSys: the host's kernel settings stay out of reach. /proc/sys
// (core_pattern, the classic container breakout, among them) is mounted
// read-only, so even uid 0 gets EROFS; /sys is not mounted at all, and the
// root being read-only it cannot appear. Sensitive /proc files are masked
// with /dev/null or an empty directory. The control opens the same
// settings for writing (without writing) on the host.
func TestProcSysAndSys(t *testing.T) {
	b := newBox(t)
	writable := []string{
		"/proc/sys/kernel/core_pattern", "/proc/sys/kernel/randomize_va_space", "/proc/sys/vm/drop_caches",
		"/proc/sys/net/ipv4/ping_group_range", "/proc/sys/kernel/hostname",
	}
	var attack [][]string
	want := map[string]string{}
	for _, p := range writable {
		attack = append(attack, step("openw", p))
		want["openw("+p+")"] = "EROFS"
	}
	for _, p := range []string{"/sys/kernel/uevent_helper", "/sys/fs/cgroup/cgroup.procs", "/sys/power/state"} {
		attack = append(attack, step("openw", p))
		want["openw("+p+")"] = "ENOENT"
	}
	attack = append(attack, step("mkdir", "/sys"), step("stat", "/proc/kallsyms"), step("read", "/proc/kallsyms"),
		step("stat", "/proc/keys"), step("stat", "/proc/timer_list"), step("ls", "/proc/acpi"), step("openw", "/proc/irq/default_smp_affinity"))
	want["mkdir(/sys)"] = "EROFS"
	want["stat(/proc/kallsyms)"] = "INFO chr 1:3"
	want["read(/proc/kallsyms)"] = "EMPTY"
	want["stat(/proc/keys)"] = "INFO chr 1:3"
	want["stat(/proc/timer_list)"] = "INFO chr 1:3"
	want["ls(/proc/acpi)"] = "EMPTY"
	want["openw(/proc/irq/default_smp_affinity)"] = "EROFS"
	r := b.attackIn(nil, steps(attack...)...)
	wantSteps(t, "in the sandbox", r, want)
	if r.code != 0 {
		t.Errorf("in the sandbox: exit %d, want 0\n%v", r.code, r)
	}
	var control [][]string
	cwant := map[string]string{}
	for _, p := range append(writable, "/sys/fs/cgroup/unified/cgroup.procs", "/proc/irq/default_smp_affinity") {
		control = append(control, step("openw", p))
		cwant["openw("+p+")"] = "OK"
	}
	control = append(control, step("read", "/proc/kallsyms"))
	c := b.attackHost(opts{}, steps(control...)...)
	wantSteps(t, "control on the host", c, cwant)
	if got := c.steps()["read(/proc/kallsyms)"]; !strings.HasPrefix(got, "OK ") {
		t.Errorf("control: read /proc/kallsyms on the host = %q, want OK", got)
	}
}

// TestCgroupEscape: moving into another cgroup (out of the limits and the
// BPF wall, which are keyed by the sandbox's cgroup) needs cgroup.procs of
// the target: cgroupfs is not mounted, cannot be mounted (EPERM, v1 or
// v2), and /proc/self/cgroup shows only the sandbox's own cgroup
// namespace root.
func TestCgroupEscape(t *testing.T) {
	b := newBox(t)
	r := b.attackIn(nil, steps(
		step("openw", "/sys/fs/cgroup/cgroup.procs"), step("openw", "/sys/fs/cgroup/unified/cgroup.procs"),
		step("openw", "/sys/fs/cgroup/pids/cgroup.procs"), step("mount", "cgroup2", "/tmp"),
		step("mount", "cgroup", "/tmp"), step("mkdir", "/sys"),
	)...)
	wantSteps(t, "in the sandbox", r, map[string]string{
		"openw(/sys/fs/cgroup/cgroup.procs)":         "ENOENT",
		"openw(/sys/fs/cgroup/unified/cgroup.procs)": "ENOENT",
		"openw(/sys/fs/cgroup/pids/cgroup.procs)":    "ENOENT",
		"mount(cgroup2,/tmp)":                        "EPERM",
		"mount(cgroup,/tmp)":                         "EPERM",
		"mkdir(/sys)":                                "EROFS",
	})
	if r.code != 0 {
		t.Errorf("in the sandbox: exit %d, want 0\n%v", r.code, r)
	}
	cg := b.sbx(opts{}, nil, "cat", "/proc/self/cgroup")
	for _, l := range strings.Split(strings.TrimSpace(cg.stdout), "\n") {
		if !strings.HasSuffix(l, ":/") {
			t.Errorf("/proc/self/cgroup in the sandbox shows a path outside its namespace: %q\n%v", l, cg)
		}
	}
	c := b.attackHost(opts{}, "openw", "/sys/fs/cgroup/unified/cgroup.procs")
	wantSteps(t, "control on the host", c, map[string]string{"openw(/sys/fs/cgroup/unified/cgroup.procs)": "OK"})
}
