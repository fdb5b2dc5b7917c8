package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"

	"github.com/sbx-sandbox/sbx/bpf"
	"github.com/sbx-sandbox/sbx/runner"
	"github.com/sbx-sandbox/sbx/sandbox"
)

const doctorUsage = `Usage: sbx doctor [--apparmor-profile]

Checks, on this host, every mechanism sbx builds on and says which tiers
"sbx run" would use, as the user who runs it (with root, or rootless).
It then runs "true" in a real sandbox with every tier "sbx run" would
pick, and reports that run's verdict. Exit status 0 only when that run
succeeded, so sbx can enforce both the file and the network policy.

  --apparmor-profile  print the AppArmor profile that lets this sbx binary
                      create user namespaces (Ubuntu 23.10+), to install as
                      /etc/apparmor.d/sbx
`

// check is one line of the doctor's report.
type check struct {
	name string
	err  error  // nil: available
	info string // detail when available
}

func cmdDoctor(args []string, s streams) int {
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
			fmt.Fprint(s.out, doctorUsage)
			return 0
		}
		if args[0] == "--apparmor-profile" && len(args) == 1 {
			self, err := selfPath()
			if err != nil {
				return fail(s, err)
			}
			fmt.Fprint(s.out, sandbox.AppArmorProfile(self))
			return 0
		}
		return fail(s, fmt.Errorf("doctor: unexpected argument %q", args[0]))
	}
	checks := doctorChecks()
	tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	for _, c := range checks {
		state, detail := "ok", c.info
		if c.err != nil {
			state, detail = "missing", c.err.Error()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.name, state, detail)
	}
	tw.Flush()
	byName := map[string]error{}
	for _, c := range checks {
		byName[c.name] = c.err
	}
	var file, net []string
	if byName["bpf lsm"] == nil {
		file = append(file, "bpf lsm")
	}
	if byName["landlock"] == nil {
		file = append(file, "landlock")
	}
	net = append(net, "empty network namespace")
	if byName["seccomp"] == nil {
		net = append(net, "seccomp socket filter")
	}
	if byName["cgroup bpf"] == nil {
		net = append(net, "cgroup bpf")
	}
	rootless := runner.Rootless()
	if rootless && byName["landlock"] == nil {
		net = append(net, "landlock tcp bind/connect")
	}
	mode := "root"
	if rootless {
		mode = "rootless (user namespace)"
	}
	fmt.Fprintf(s.out, "\nmode:          %s\n", mode)
	fmt.Fprintf(s.out, "file tiers:    %s\n", orNone(file))
	fmt.Fprintf(s.out, "network tiers: %s\n", strings.Join(net, ", "))
	if rootless {
		fmt.Fprintf(s.out, "limits:        %s\n", limitsInfo())
	}
	refuse := len(file) == 0 || byName["seccomp"] != nil || byName["namespaces"] != nil
	if rootless {
		// Landlock is the only file and TCP tier without root; no
		// cgroup is needed (rlimits are the fallback).
		refuse = refuse || byName["landlock"] != nil || byName["user namespaces"] != nil
	} else {
		refuse = refuse || byName["cgroups"] != nil
	}
	if refuse {
		fmt.Fprintln(s.out, "verdict:       sbx run would refuse to run here (see the missing lines above)")
		return 1
	}
	// The probes above only say what the host offers; a real run proves
	// that sbx works with it. Never claim more than that run showed.
	info, err := canaryRun()
	if err != nil {
		fmt.Fprintf(s.out, "canary run:    failed: %v\n", err)
		fmt.Fprintln(s.out, "verdict:       sbx run fails here although the mechanisms are present (see the canary run)")
		return 1
	}
	fmt.Fprintf(s.out, "canary run:    ok: %s\n", info)
	fmt.Fprintln(s.out, "verdict:       sbx run can enforce files and network here")
	return 0
}

func orNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

func doctorChecks() []check {
	var out []check
	add := func(name string, info string, err error) { out = append(out, check{name, err, info}) }

	rootless := runner.Rootless()
	if rootless {
		add("root", "", errors.New("running as uid "+strconv.Itoa(os.Geteuid())+": rootless sandboxes (run with sudo for the BPF tiers)"))
	} else {
		add("root", "euid 0", nil)
	}
	nsErr := func() error {
		for _, ns := range []string{"mnt", "pid", "net", "ipc", "uts", "cgroup", "user"} {
			if _, err := os.Stat("/proc/self/ns/" + ns); err != nil {
				return fmt.Errorf("%s namespace: %w", ns, err)
			}
		}
		return nil
	}()
	add("namespaces", "mount, pid, net, ipc, uts, cgroup, user", nsErr)
	add("user namespaces", usernsInfo(), usernsErr())
	add("cgroups", cgroupInfo(), cgroupErr())
	add("seccomp", "filter mode", seccompErr())
	if rootless {
		add("cgroup bpf", "", runner.ErrCgroupBPFNeedsRoot)
		add("bpf lsm", "", runner.ErrBPFLSMNeedsRoot)
		add("denial tracer", "", runner.ErrCgroupBPFNeedsRoot)
	} else {
		add("cgroup bpf", "sock_create, connect4/6, sendmsg4/6, bind4/6", cgroupBPFErr())
		add("bpf lsm", "file_open, path_*, socket_*, ptrace, kill, ioctl hooks", bpf.LSMSupported())
		add("denial tracer", "tp_btf sys_exit: reports refusals by Landlock, seccomp and read-only mounts", tracerErr())
	}
	abi, llErr := sandbox.LandlockABI()
	add("landlock", fmt.Sprintf("ABI %d", abi), llErr)
	add("egress", runner.EgressInfo(rootless), nil)
	add("securityfs", "/sys/kernel/security", mountedErr("/sys/kernel/security", "securityfs"))
	add("bpffs", "/sys/fs/bpf", mountedErr("/sys/fs/bpf", "bpf"))
	return out
}

// usernsErr says why unprivileged user namespaces (needed rootless) are
// unavailable, with the fix.
func usernsErr() error {
	if v, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(v)) == "0" {
		return errors.New("disabled (kernel.unprivileged_userns_clone=0; enable: sudo sysctl kernel.unprivileged_userns_clone=1)")
	}
	if v, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(v)) == "0" {
		return errors.New("disabled (user.max_user_namespaces=0; enable: sudo sysctl user.max_user_namespaces=15000)")
	}
	if r := sandbox.ReadUsernsRestriction("/proc"); r.Blocks() {
		self, _ := selfPath()
		return errors.New(sandbox.AppArmorFix(self))
	}
	return nil
}

func usernsInfo() string {
	if r := sandbox.ReadUsernsRestriction("/proc"); r.Restricted {
		return "AppArmor restricts them; this binary's profile (" + r.Label + ") allows them"
	}
	return "unprivileged user namespaces allowed"
}

// limitsInfo says how a rootless run enforces its limits here.
func limitsInfo() string {
	d, err := sandbox.HostDelegation()
	if err == nil && d.Has("memory", "cpu", "pids") {
		return "cgroup2 limits in the delegated subtree " + d.Dir
	}
	if err == nil {
		err = fmt.Errorf("the delegated subtree %s lacks controllers (has %q)", d.Dir, d.Controllers)
	}
	return fmt.Sprintf("rlimits (weaker: %s), because no delegated cgroup2 subtree: %v; explicit --memory/--cpus/--pids refuse to run", sandbox.RlimitLimits, err)
}

func selfPath() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find sbx binary: %w", err)
	}
	if r, err := filepath.EvalSymlinks(self); err == nil {
		self = r
	}
	return self, nil
}

func cgroupInfo() string {
	m, err := sandbox.Cgroup2Mount()
	if err != nil {
		return ""
	}
	if m == "/sys/fs/cgroup" {
		return "cgroup2 only at " + m
	}
	return "hybrid: v1 controllers, cgroup2 at " + m
}

func cgroupErr() error {
	_, err := sandbox.Cgroup2Mount()
	return err
}

func seccompErr() error {
	data, err := os.ReadFile("/proc/sys/kernel/seccomp/actions_avail")
	if err != nil {
		return fmt.Errorf("seccomp not available: %w", err)
	}
	if !strings.Contains(string(data), "errno") {
		return errors.New("seccomp lacks the errno action")
	}
	return nil
}

func cgroupBPFErr() error {
	for _, pt := range []ebpf.ProgramType{ebpf.CGroupSock, ebpf.CGroupSockAddr} {
		if err := features.HaveProgramType(pt); err != nil {
			return fmt.Errorf("program type %s: %w", pt, err)
		}
	}
	return nil
}

// tracerErr says why the denial tracer cannot run. It only reports, so
// its absence does not change the verdict: runs go ahead without it.
func tracerErr() error {
	if err := bpf.TraceSupported(); err != nil {
		return fmt.Errorf("refusals by Landlock, seccomp and read-only mounts are not reported: %w", err)
	}
	return nil
}

func mountedErr(path, fstype string) error {
	data, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return err
	}
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) > 2 && f[1] == path && f[2] == fstype {
			return nil
		}
	}
	return fmt.Errorf("not mounted (sbx mounts it when it needs it: mount -t %s none %s)", fstype, path)
}
