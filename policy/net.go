package policy

import (
	"fmt"
	"net/netip"
)

// WallFlag is a bit of a run's network wall entry; the values are those of
// the C enums both BPF programs read (bpf/include/sbx_net.h), checked by package
// bpf's tests.
type WallFlag uint32

// The wall's exceptions.
const (
	// WallProxy allows TCP sockets of the proxy's family and connects
	// (and sends) to exactly the proxy's address and port.
	WallProxy WallFlag = 1
	// WallAll allows every inet socket and address (--net host).
	WallAll WallFlag = 2
	// WallLoopback allows inet sockets, binds, and connects and sends to
	// loopback addresses in the run's own network namespace.
	WallLoopback WallFlag = 4
)

// Address families as the kernel numbers them (AF_INET, AF_INET6 of
// <linux/socket.h>); fixed by the ABI.
const (
	afInet  = 2
	afInet6 = 10
)

// WallRules are the exceptions one run gets from the network wall (both
// the cgroup BPF wall and the BPF LSM tier's socket hooks). The zero value
// grants none: every inet socket refused.
type WallRules struct {
	// Proxy, if valid, is the one TCP endpoint the run may connect to.
	Proxy netip.AddrPort
	// HostNetwork lifts the wall (the run shares the host's network).
	HostNetwork bool
	// Loopback allows the sandbox to talk to itself over its own lo.
	Loopback bool
	// NetnsCookie is the run's network namespace (SO_NETNS_COOKIE) that
	// Loopback is limited to; 0 where the kernel cannot tell it (before
	// Linux 5.14): any namespace but the host's.
	NetnsCookie uint64
}

// WallEntry is a run's entry in the wall's per-run map, in the layout both
// BPF programs share.
type WallEntry struct {
	Flags       WallFlag
	ProxyFamily uint32   // afInet or afInet6
	ProxyAddr   [16]byte // IPv4 in the first 4 bytes, or IPv6
	ProxyPort   uint16   // host byte order
	NetnsCookie uint64
}

// Wall compiles the network part of p for a run in netns (its cookie, or
// 0): the zero rules for --net none, Loopback for --net loopback, each
// with the proxy when there is one; HostNetwork alone for --net host.
func (n Network) Wall(netnsCookie uint64) WallRules {
	if n.Mode == NetHost {
		return WallRules{HostNetwork: true} // the proxy is moot
	}
	r := WallRules{Proxy: n.Proxy}
	switch n.Mode {
	case NetLoopback:
		r.Loopback, r.NetnsCookie = true, netnsCookie
	}
	return r
}

// Compile checks r and encodes it as the map entry, the one place the
// proxy exception is validated: a plain IPv4 or IPv6 address (not
// v4-in-v6, no zone, not unspecified) and a port.
func (r WallRules) Compile() (WallEntry, error) {
	var e WallEntry
	if r.Proxy.IsValid() {
		a := r.Proxy.Addr()
		if a.Is4In6() || a.Zone() != "" || a.IsUnspecified() || r.Proxy.Port() == 0 {
			return WallEntry{}, fmt.Errorf("allow proxy %s: want a plain IPv4 or IPv6 address and a port", r.Proxy)
		}
		e.Flags |= WallProxy
		e.ProxyFamily = afInet
		if a.Is6() {
			e.ProxyFamily = afInet6
		}
		copy(e.ProxyAddr[:], a.AsSlice())
		e.ProxyPort = r.Proxy.Port()
	}
	if r.HostNetwork {
		e.Flags |= WallAll
	}
	if r.Loopback {
		e.Flags |= WallLoopback
		e.NetnsCookie = r.NetnsCookie
	}
	return e, nil
}
