package policy

import "net/netip"

// Policy is everything a run may do.
type Policy struct {
	Files   Files
	Network Network
	Limits  Limits
}

// Files is what the program may touch, by path inside the sandbox (which is
// the host path for everything sbx binds at the same place).
type Files struct {
	// System are the host's system directories, mounted read-only at the
	// same path (sandbox.HostLayout): read and execute.
	System []string
	// ReadOnly are extra paths mounted read-only (--ro): read and execute.
	ReadOnly []string
	// ReadWrite are extra paths mounted read-write (--rw).
	ReadWrite []string
	// Workspace is the project directory, mounted at the same path;
	// writable only with Write.
	Workspace string
	Write     bool
	// Home is the host directory behind $HOME; HomeInside where it is
	// mounted in the sandbox. Always writable.
	Home, HomeInside string
	// RunState are the host paths of the run's own state bound writable
	// below HomeInside (staged files, --rw file copies): granted by host
	// path on the BPF LSM tier, by HomeInside on Landlock.
	RunState []string
	// Devices are directories of device nodes: read, write and ioctl.
	Devices []string
	// Hidden are the paths of --mask: hidden by mounts, and refused by
	// identity on the BPF LSM tier, whatever name reaches them.
	Hidden []string
	// Masked are paths hidden by an empty mount (root-only files, say);
	// Protected are paths inside writable mounts remounted read-only
	// (.git/hooks, say). Both are enforced by mounts, not by the file
	// tiers, which see through neither.
	Masked, Protected []string
}

// NetMode is where the program's sockets may reach.
type NetMode int

// The modes of --net.
const (
	// NetLoopback: its own network namespace with only lo, and inet
	// sockets allowed on it (the default).
	NetLoopback NetMode = iota
	// NetNone: no inet socket at all.
	NetNone
	// NetHost: the host's network, unrestricted.
	NetHost
)

// String is the --net value of m.
func (m NetMode) String() string {
	switch m {
	case NetLoopback:
		return "loopback"
	case NetNone:
		return "none"
	case NetHost:
		return "host"
	}
	return "NetMode(?)"
}

// Network is where the program's sockets may reach.
type Network struct {
	Mode NetMode
	// Proxy, if valid, is the one TCP endpoint beyond the sandbox the
	// program may connect to (the egress proxy of --allow-host).
	Proxy netip.AddrPort
	// Forwards are the TCP endpoints beyond loopback addresses that sbx
	// puts on the sandbox's own lo under NetLoopback, each served by a
	// forwarder to the same address on the host's side (the allowed IP
	// addresses of --allow-host): at most MaxWallForwards.
	Forwards []netip.AddrPort
}

// Limits are the run's resource limits; zero fields are unlimited.
type Limits struct {
	MemoryBytes int64
	CPUs        float64
	Pids        int64
}
