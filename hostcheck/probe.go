package hostcheck

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/bpf"
	"github.com/sbx-sandbox/sbx/bpf/lsm"
	"github.com/sbx-sandbox/sbx/bpf/tracer"
	"github.com/sbx-sandbox/sbx/internal/cgroup2"
	"github.com/sbx-sandbox/sbx/policy"
	"github.com/sbx-sandbox/sbx/sandbox"
)

// Options say how much to probe.
type Options struct {
	// StateDir is where the BPF LSM probe's verdict is cached for the
	// current boot (empty: not cached).
	StateDir string
	// Full probes everything doctor prints. Without it only what a run
	// decides from is probed (the uid and capabilities, Landlock, the BPF
	// LSM from its cache); the rest is left unprobed, and using it is its
	// probe (the cgroup BPF wall that fails to attach fails the run).
	Full bool
	// Self is the sbx binary, named in AppArmor's fix.
	Self string
}

// lsmProbe and tracerProbe are variables so that tests can stand in for
// the kernel's answer.
var (
	lsmProbe    = lsm.Supported
	tracerProbe = tracer.Supported
)

// Probe probes the host.
func Probe(o Options) policy.Host {
	h := policy.Host{EUID: os.Geteuid(), CapSysAdmin: HasCap(unix.CAP_SYS_ADMIN), CapNetAdmin: HasCap(unix.CAP_NET_ADMIN)}
	k := bpf.RunningKernel()
	if k.Major > 0 {
		h.Kernel = k.String()
	}
	abi, err := sandbox.LandlockABI()
	h.LandlockABI = abi
	h.Landlock = feature(fmt.Sprintf("ABI %d", abi), belowFloor(err, bpf.MinLandlock, "Landlock file tier", k))
	rootless := h.Rootless()
	if rootless {
		h.BPFLSM = policy.Absent(policy.ErrBPFLSMNeedsRoot)
	} else {
		h.BPFLSM = feature("file_open, path_*, socket_*, ptrace, kill, ioctl hooks", cachedLSMProbe(o.StateDir))
	}
	if !o.Full {
		return h
	}
	h.Namespaces = feature("mount, pid, net, ipc, uts, cgroup, user", namespacesErr())
	h.UserNS = feature(usernsInfo(), usernsErr(o.Self))
	h.AppArmor = feature(usernsInfo(), nil)
	m, err := cgroup2.Mount()
	h.Cgroup2 = feature(cgroupInfo(m), err)
	h.Delegation = delegation()
	h.Seccomp = feature("filter mode", seccompErr())
	if rootless {
		h.CgroupBPF = policy.Absent(policy.ErrCgroupBPFNeedsRoot)
		h.Tracer = policy.Absent(policy.ErrCgroupBPFNeedsRoot)
	} else {
		h.CgroupBPF = feature("sock_create, connect4/6, sendmsg4/6, bind4/6", belowFloor(cgroupBPFErr(), bpf.MinWall, "cgroup BPF network wall", k))
		h.Tracer = feature("tp_btf sys_exit: reports refusals by Landlock, seccomp and read-only mounts", belowFloor(tracerErr(), bpf.MinTracer, "denial tracer", k))
	}
	h.Securityfs = feature("/sys/kernel/security", mountedErr("/sys/kernel/security", "securityfs"))
	h.BPFFS = feature("/sys/fs/bpf", mountedErr("/sys/fs/bpf", "bpf"))
	return h
}

// belowFloor puts first, in a probe's error, that kernel k is older than
// the tier what needs: the probe's own words (ENOSYS, "not built into
// this kernel") do not say which kernel would do.
func belowFloor(err error, f bpf.Floor, what string, k bpf.KernelVersion) error {
	if err == nil {
		return nil
	}
	if ferr := f.Below(what, k); ferr != nil {
		return fmt.Errorf("%w (%v)", ferr, err)
	}
	return err
}

// selfID identifies the running binary (device, inode, size and
// modification time of /proc/self/exe), so that a rebuilt sbx probes again.
func selfID() string {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &st); err != nil {
		return "unknown"
	}
	return fmt.Sprintf("%d:%d:%d:%d", st.Dev, st.Ino, st.Size, st.Mtim.Nano())
}

func feature(info string, err error) policy.Feature {
	if err != nil {
		return policy.Absent(err)
	}
	return policy.Present(info)
}

// HasCap reports whether this process holds capability c in its effective
// set. When it cannot tell, it answers true: the root path then says what
// fails.
func HasCap(c int) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return true
	}
	return data[c/32].Effective&(1<<(c%32)) != 0
}

func namespacesErr() error {
	for _, ns := range []string{"mnt", "pid", "net", "ipc", "uts", "cgroup", "user"} {
		if _, err := os.Stat("/proc/self/ns/" + ns); err != nil {
			return fmt.Errorf("%s namespace: %w", ns, err)
		}
	}
	return nil
}

// usernsErr says why unprivileged user namespaces (needed rootless) are
// unavailable, with the fix.
func usernsErr(self string) error {
	if v, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(v)) == "0" {
		return errors.New("disabled (kernel.unprivileged_userns_clone=0; enable: sudo sysctl kernel.unprivileged_userns_clone=1)")
	}
	if v, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(v)) == "0" {
		return errors.New("disabled (user.max_user_namespaces=0; enable: sudo sysctl user.max_user_namespaces=15000)")
	}
	if r := sandbox.ReadUsernsRestriction("/proc"); r.Blocks() {
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

func cgroupInfo(m string) string {
	switch m {
	case "":
		return ""
	case "/sys/fs/cgroup":
		return "cgroup2 only at " + m
	}
	return "hybrid: v1 controllers, cgroup2 at " + m
}

// delegation is the delegated cgroup2 subtree a rootless run puts its
// limits in.
func delegation() policy.Feature {
	d, err := sandbox.HostDelegation()
	if err == nil && !d.Has("memory", "cpu", "pids") {
		err = fmt.Errorf("the delegated subtree %s lacks controllers (has %q)", d.Dir, d.Controllers)
	}
	if err != nil {
		return policy.Absent(err)
	}
	return policy.Present(d.Dir)
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
// its absence does not change the decision: runs go ahead without it.
func tracerErr() error {
	if err := tracerProbe(); err != nil {
		return fmt.Errorf("refusals by Landlock, seccomp and read-only mounts are not reported: %w", err)
	}
	return nil
}

// mountedErr says whether a filesystem of fstype is mounted at path.
func mountedErr(path, fstype string) error {
	ms, err := mountinfo.GetMounts(func(m *mountinfo.Info) (skip, stop bool) {
		return m.Mountpoint != path || m.FSType != fstype, false
	})
	if err != nil {
		return fmt.Errorf("read mount table: %w", err)
	}
	if len(ms) == 0 {
		return fmt.Errorf("not mounted (sbx mounts it when it needs it: mount -t %s none %s)", fstype, path)
	}
	return nil
}

// cachedLSMProbe remembers the BPF LSM probe's verdict for the current
// boot and program set in stateDir: the probe loads a program (and the kernel's BTF), ~25
// ms, and its answer cannot change without a reboot. A cached "available"
// is still proven on every run by the tier's self-test.
func cachedLSMProbe(stateDir string) error {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil || stateDir == "" {
		return lsmProbe()
	}
	// Another build's verdict is about other programs, or worded
	// otherwise: the key names the program set and this binary.
	key := strings.TrimSpace(string(boot)) + " " + lsm.Version() + " " + selfID()
	path := filepath.Join(stateDir, "lsm-probe")
	if data, err := os.ReadFile(path); err == nil {
		if k, verdict, ok := strings.Cut(string(data), "\n"); ok && k == key {
			if verdict == "ok" {
				return nil
			}
			return errors.New(verdict)
		}
	}
	perr := lsmProbe()
	verdict := "ok"
	if perr != nil {
		verdict = perr.Error()
	}
	if err := os.MkdirAll(stateDir, 0o700); err == nil {
		tmp := path + ".tmp" + strconv.Itoa(os.Getpid())
		if os.WriteFile(tmp, []byte(key+"\n"+verdict), 0o600) == nil {
			_ = os.Rename(tmp, path)
		}
	}
	return perr
}
