package sandbox

import (
	"os"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"
)

// Rootless sandboxes are built by an ordinary user, without any privilege.
// A new user namespace maps one id, the user's own, and libcontainer's
// bootstrap becomes uid 0 of that namespace (it switches to root in every
// user namespace it creates, so 0 is the id that must be mapped: a single
// mapping written by the process itself, no newuidmap). The shim runs as
// that 0 and starts the program in a user namespace of its own that maps
// the user's ids back (execstep.go), so the program is the user inside
// too, without capabilities (empty sets, no_new_privs); every host file
// not owned by the user appears owned by the overflow id (nobody). The
// mount, PID, IPC, UTS, network and cgroup namespaces are the same as
// root's, and owned by the sandbox's user namespace.

// shimCaps are the capabilities a rootless sandbox's shim holds, in the
// sandbox's user namespace only, until the exec step has started.
var shimCaps = []string{"CAP_SETFCAP", "CAP_SETPCAP"}

// rootlessConfig turns cfg, built for root, into its rootless form.
func (s *Spec) rootlessConfig(cfg *configs.Config) {
	cfg.RootlessEUID = true
	cfg.RootlessCgroups = true
	cfg.Namespaces = append(cfg.Namespaces, configs.Namespace{Type: configs.NEWUSER})
	cfg.UIDMappings = []configs.IDMap{{ContainerID: 0, HostID: int64(s.UID), Size: 1}}
	cfg.GIDMappings = []configs.IDMap{{ContainerID: 0, HostID: int64(s.GID), Size: 1}}
	// The shim maps this namespace's 0 (the user) into the program's own
	// namespace (execstep.go), which the kernel allows only to a writer
	// with CAP_SETFCAP here; CAP_SETPCAP lets the shim and the exec step
	// drop both again (the shim right after the step has started).
	cfg.Capabilities = &configs.Capabilities{Bounding: shimCaps, Effective: shimCaps, Permitted: shimCaps}
	// Device nodes are bind-mounted from the host (a user namespace
	// cannot mknod); the devices controller is root's.
	cfg.Cgroups.Resources.Devices = nil
	if s.Cgroup != "" {
		// A delegated cgroup2 subtree: the limits are cgroup limits,
		// as for root.
		cfg.Cgroups.Path = s.Cgroup
		cfg.Cgroups.Rootless = true
		return
	}
	// No cgroup the user may write: libcontainer then tolerates the
	// permission errors of an empty path, and the program stays in the
	// caller's cgroup. The limits become rlimits (see [RlimitLimits]).
	parent := CgroupParent
	if os.Geteuid() == 0 {
		// Root without CAP_SYS_ADMIN can still write cgroupfs: keep its
		// sandboxes out of root's sbx parent, which the network wall
		// holds for root's sandboxes (it would refuse this run's
		// loopback sockets).
		parent = RootlessCgroupParent
	}
	cfg.Cgroups = &cgroups.Cgroup{Parent: parent, Name: s.ID, Rootless: true, Resources: &cgroups.Resources{}}
	cfg.Rlimits = append(cfg.Rlimits, s.rlimits()...)
}

// RootlessCgroupParent is where the cgroups of rootless sandboxes started
// by root without CAP_SYS_ADMIN go, when cgroupfs lets it create them.
const RootlessCgroupParent = CgroupParent + "-rootless"

// RlimitLimits describes what the rlimit fallback of a rootless sandbox
// without a delegated cgroup enforces, and how it is weaker than cgroups.
const RlimitLimits = "memory is RLIMIT_DATA per process, processes RLIMIT_NPROC, CPU unlimited"

// The memory limit of the rlimit fallback is RLIMIT_DATA, not RLIMIT_AS:
// RLIMIT_DATA (Linux 4.7+) counts a process's private writable mappings,
// what it can fill, and not the PROT_NONE reservations with which V8 and
// Bun set aside address space (every WebAssembly instance reserves ~10
// GiB; every Node fetch instantiates one), which RLIMIT_AS counts: under
// an RLIMIT_AS of 4 GiB, `WebAssembly.instantiate` fails with "Out of
// memory" and Bun programs abort. It stays per process.

// rlimits are the limits of s as rlimits, for a rootless sandbox without
// a delegated cgroup. RLIMIT_NPROC is counted per user namespace (Linux
// 5.14+), so it counts the sandbox's own processes.
func (s *Spec) rlimits() []configs.Rlimit {
	var out []configs.Rlimit
	if m := s.Limits.MemoryBytes; m > 0 {
		out = append(out, configs.Rlimit{Type: unix.RLIMIT_DATA, Hard: uint64(m), Soft: uint64(m)})
	}
	if p := s.Limits.Pids; p > 0 {
		out = append(out, configs.Rlimit{Type: unix.RLIMIT_NPROC, Hard: uint64(p), Soft: uint64(p)})
	}
	return out
}
