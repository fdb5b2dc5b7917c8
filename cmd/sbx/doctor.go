package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"

	"github.com/sbx-sandbox/sbx/bpf"
	"github.com/sbx-sandbox/sbx/sandbox"
)

const doctorUsage = `Usage: sbx doctor

Checks, on this host, every mechanism sbx builds on and says which tiers
"sbx run" would use. Exit status 0 only when sbx can enforce both the file
and the network policy.
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
	fmt.Fprintf(s.out, "\nfile tiers:    %s\n", orNone(file))
	fmt.Fprintf(s.out, "network tiers: %s\n", strings.Join(net, ", "))
	if len(file) == 0 || byName["seccomp"] != nil || byName["namespaces"] != nil || byName["cgroups"] != nil {
		fmt.Fprintln(s.out, "verdict:       sbx run would refuse to run here (see the missing lines above)")
		return 1
	}
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

	add("root", "", needRoot())
	nsErr := func() error {
		for _, ns := range []string{"mnt", "pid", "net", "ipc", "uts", "cgroup", "user"} {
			if _, err := os.Stat("/proc/self/ns/" + ns); err != nil {
				return fmt.Errorf("%s namespace: %w", ns, err)
			}
		}
		return nil
	}()
	add("namespaces", "mount, pid, net, ipc, uts, cgroup, user", nsErr)
	userns := "unprivileged user namespaces allowed"
	if v, err := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); err == nil && strings.TrimSpace(string(v)) == "1" {
		add("user namespaces", "", errors.New("AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1)"))
	} else {
		add("user namespaces", userns, nil)
	}
	add("cgroups", cgroupInfo(), cgroupErr())
	add("seccomp", "filter mode", seccompErr())
	add("cgroup bpf", "sock_create, connect4/6, sendmsg4/6, bind4/6", cgroupBPFErr())
	add("bpf lsm", "file_open, path_*, socket_*, ptrace, kill, ioctl hooks", bpf.LSMSupported())
	add("denial tracer", "tp_btf sys_exit: reports refusals by Landlock, seccomp and read-only mounts", tracerErr())
	abi, llErr := sandbox.LandlockABI()
	add("landlock", fmt.Sprintf("ABI %d", abi), llErr)
	add("securityfs", "/sys/kernel/security", mountedErr("/sys/kernel/security", "securityfs"))
	add("bpffs", "/sys/fs/bpf", mountedErr("/sys/fs/bpf", "bpf"))
	return out
}

func needRoot() error {
	if os.Geteuid() != 0 {
		return errors.New("sbx run needs root for now; run with sudo")
	}
	return nil
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
