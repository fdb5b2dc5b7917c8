package policy

import (
	"errors"
	"fmt"
	"strings"
)

// Why the BPF tiers do not apply to a rootless run.
var (
	ErrCgroupBPFNeedsRoot = errors.New("cgroup BPF needs root (CAP_BPF and CAP_NET_ADMIN on the host)")
	ErrBPFLSMNeedsRoot    = errors.New("BPF LSM needs root (CAP_BPF and CAP_MAC_ADMIN on the host)")
)

// Feature is the state of one mechanism on a host.
type Feature struct {
	// Probed is false when the mechanism was not probed: a run does not
	// spend time on probes that using the mechanism proves anyway (the
	// cgroup BPF wall fails to attach, say). [Decide] then assumes it
	// present; what fails later fails the run as closed as before.
	Probed bool
	// Err says why the mechanism is unavailable, with the fix; nil when
	// it is available (or not probed).
	Err error
	// Info is a detail worth printing when it is available.
	Info string
}

// Missing reports whether the feature was probed and found unavailable.
func (f Feature) Missing() bool { return f.Probed && f.Err != nil }

// Present returns a probed, available feature with detail info.
func Present(info string) Feature { return Feature{Probed: true, Info: info} }

// Absent returns a probed, unavailable feature, err saying why.
func Absent(err error) Feature { return Feature{Probed: true, Err: err} }

// Host is what a host offers sbx, as one probe found it (package hostcheck
// fills it; tests write it by hand).
type Host struct {
	// EUID is the effective uid of sbx.
	EUID int
	// Kernel is the running kernel's major.minor ("" when unknown).
	Kernel string
	// CapSysAdmin is whether sbx holds CAP_SYS_ADMIN (effective): root
	// without it (in a container) takes the rootless path.
	CapSysAdmin bool
	// CapNetAdmin is whether sbx holds CAP_NET_ADMIN (effective): the
	// root path needs it for the sandbox's network namespace and the
	// cgroup BPF wall.
	CapNetAdmin bool
	// Namespaces are the mount, pid, net, ipc, uts, cgroup and user
	// namespaces; UserNS whether an unprivileged user may create one
	// (sysctls, AppArmor's restriction).
	Namespaces, UserNS Feature
	// Cgroup2 is the cgroup2 mount; Delegation a delegated subtree with
	// the memory, cpu and pids controllers (rootless limits).
	Cgroup2, Delegation Feature
	// Seccomp is the filter mode with the errno action.
	Seccomp Feature
	// Landlock is the Landlock LSM, LandlockABI its ABI version.
	Landlock    Feature
	LandlockABI int
	// CgroupBPF is the network wall's program types; BPFLSM the BPF LSM
	// file tier; Tracer the denial tracer (reports only).
	CgroupBPF, BPFLSM, Tracer Feature
	// AppArmor says whether AppArmor restricts user namespaces, and how.
	AppArmor Feature
	// Securityfs and BPFFS are the mounts the BPF tiers use (sbx mounts
	// them when it needs them).
	Securityfs, BPFFS Feature
}

// Rootless reports whether runs on h take the rootless path: not root, or
// root without CAP_SYS_ADMIN.
func (h Host) Rootless() bool { return h.EUID != 0 || !h.CapSysAdmin }

// FileDemand is the file tier a run demands (--policy).
type FileDemand string

// The values of --policy.
const (
	// DemandAuto uses every file tier the host offers and refuses to run
	// with none.
	DemandAuto FileDemand = "auto"
	// DemandLandlock demands Landlock, alone.
	DemandLandlock FileDemand = "landlock"
	// DemandBPF demands the BPF LSM tier, alone.
	DemandBPF FileDemand = "bpf"
)

// ParseFileDemand checks a --policy value ("" is auto).
func ParseFileDemand(s string) (FileDemand, error) {
	switch d := FileDemand(s); d {
	case DemandAuto, DemandLandlock, DemandBPF:
		return d, nil
	case "":
		return DemandAuto, nil
	}
	return "", fmt.Errorf("unknown policy %q: want auto, landlock or bpf", s)
}

// Demand is what the user asks of a run's tiers.
type Demand struct {
	Files FileDemand
}

// Decision is the tiers a run gets on a host.
type Decision struct {
	// Rootless: the run takes the rootless path (user namespace, no BPF
	// tiers).
	Rootless bool
	// Landlock and BPFLSM are the file tiers.
	Landlock, BPFLSM bool
	// CgroupWall is the cgroup BPF network wall (root only).
	CgroupWall bool
	// Tracer reports refusals (root only; its absence never refuses).
	Tracer bool
	// Refused, if not nil, says why sbx refuses to run here: a demanded
	// tier, or a mechanism every run needs, is missing. Fail closed.
	Refused error
}

// FileTiers names the file tiers of d, as doctor prints them.
func (d Decision) FileTiers() []string {
	var l []string
	if d.BPFLSM {
		l = append(l, "bpf lsm")
	}
	if d.Landlock {
		l = append(l, "landlock")
	}
	return l
}

// NetTiers names the network tiers of d, as doctor prints them.
func (d Decision) NetTiers() []string {
	l := []string{"empty network namespace", "seccomp socket filter"}
	if d.CgroupWall {
		l = append(l, "cgroup bpf")
	}
	if d.Rootless && d.Landlock {
		l = append(l, "landlock tcp bind/connect")
	}
	return l
}

// Decide picks the tiers of a run on host for demand, failing closed: a
// demanded file tier that is missing, no file tier at all, or a mechanism
// every run of its path needs (namespaces and seccomp; as root
// CAP_NET_ADMIN, the cgroup2 mount and the cgroup BPF network wall, which a root run cannot go
// without; rootless, user namespaces) refuses, naming what is missing. A
// demanded tier is the run's only file tier (--policy landlock runs
// without the BPF LSM even where it exists, so each tier can be chosen and
// proven on its own); auto stacks every tier the host offers. Features not
// probed count as present: using them is their probe.
func Decide(host Host, demand Demand) Decision {
	d := Decision{Rootless: host.Rootless()}
	llErr := host.Landlock.Err
	lsmErr := host.BPFLSM.Err
	if d.Rootless {
		lsmErr = ErrBPFLSMNeedsRoot
	}
	d.Landlock, d.BPFLSM = llErr == nil, lsmErr == nil
	var refuse []string
	switch demand.Files {
	case DemandLandlock:
		if llErr != nil {
			refuse = append(refuse, fmt.Sprintf("--policy landlock: %v", llErr))
		}
		d.BPFLSM = false
	case DemandBPF:
		if lsmErr != nil {
			refuse = append(refuse, fmt.Sprintf("--policy bpf: %v", lsmErr))
		}
		d.Landlock = false
	default:
		if llErr != nil && lsmErr != nil {
			refuse = append(refuse, fmt.Sprintf("no file tier available, refusing to run unconfined: %v; %v", llErr, lsmErr))
		}
	}
	need := func(name string, f Feature) {
		if f.Missing() {
			refuse = append(refuse, fmt.Sprintf("%s: %v", name, f.Err))
		}
	}
	need("namespaces", host.Namespaces)
	need("seccomp", host.Seccomp)
	if d.Rootless {
		need("user namespaces", host.UserNS)
	} else {
		if !host.CapNetAdmin {
			refuse = append(refuse, "root without CAP_NET_ADMIN: the sandbox's network namespace and the cgroup BPF wall need it (give sbx every capability, or run it as a user for a rootless sandbox)")
		}
		need("cgroups", host.Cgroup2)
		need("network wall (cgroup BPF)", host.CgroupBPF)
		d.CgroupWall = true
		d.Tracer = !host.Tracer.Missing()
	}
	if len(refuse) > 0 {
		d.Refused = errors.New(strings.Join(refuse, "; "))
	}
	return d
}
