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
	// Forwards, with Loopback, are TCP endpoints on the run's own lo
	// beyond loopback addresses that the run may connect to: sbx's
	// forwarders of allowed IP addresses (--allow-host 10.0.0.5:5432),
	// at most MaxWallForwards.
	Forwards []netip.AddrPort
}

// MaxWallForwards is the most forwarder endpoints a run's wall entry holds
// (SBX_NET_MAX_FWD of bpf/include/sbx_net.h).
const MaxWallForwards = 8

// IsZero reports whether r grants no exception.
func (r WallRules) IsZero() bool {
	return !r.Proxy.IsValid() && !r.HostNetwork && !r.Loopback && r.NetnsCookie == 0 && len(r.Forwards) == 0
}

// WallEndpoint is one TCP endpoint of a wall entry.
type WallEndpoint struct {
	Family uint32   // afInet or afInet6
	Addr   [16]byte // IPv4 in the first 4 bytes, or IPv6
	Port   uint16   // host byte order
}

// WallEntry is a run's entry in the wall's per-run map, in the layout both
// BPF programs share.
type WallEntry struct {
	Flags       WallFlag
	ProxyFamily uint32   // afInet or afInet6
	ProxyAddr   [16]byte // IPv4 in the first 4 bytes, or IPv6
	ProxyPort   uint16   // host byte order
	NetnsCookie uint64
	NForwards   uint32
	Forwards    [MaxWallForwards]WallEndpoint
}

// Wall compiles the network part of p for a run in netns (its cookie, or
// 0): the zero rules for --net none, Loopback and the forwarders for --net
// loopback, each with the proxy when there is one; HostNetwork alone for
// --net host.
func (n Network) Wall(netnsCookie uint64) WallRules {
	if n.Mode == NetHost {
		return WallRules{HostNetwork: true} // the proxy is moot
	}
	r := WallRules{Proxy: n.Proxy}
	switch n.Mode {
	case NetLoopback:
		r.Loopback, r.NetnsCookie = true, netnsCookie
		r.Forwards = n.Forwards
	}
	return r
}

// endpoint encodes ap for the wall, refusing what the BPF programs would
// never match: a v4-in-v6, zoned or unspecified address, or port 0.
func endpoint(ap netip.AddrPort) (WallEndpoint, error) {
	a := ap.Addr()
	if !ap.IsValid() || a.Is4In6() || a.Zone() != "" || a.IsUnspecified() || ap.Port() == 0 {
		return WallEndpoint{}, fmt.Errorf("%s: want a plain IPv4 or IPv6 address and a port", ap)
	}
	e := WallEndpoint{Family: afInet, Port: ap.Port()}
	if a.Is6() {
		e.Family = afInet6
	}
	copy(e.Addr[:], a.AsSlice())
	return e, nil
}

// Compile checks r and encodes it as the map entry, the one place the
// proxy and forwarder exceptions are validated: each a plain IPv4 or IPv6
// address (not v4-in-v6, no zone, not unspecified) and a port; forwarders
// only with Loopback (they live on the run's own lo), at most
// MaxWallForwards.
func (r WallRules) Compile() (WallEntry, error) {
	var e WallEntry
	if r.Proxy.IsValid() {
		p, err := endpoint(r.Proxy)
		if err != nil {
			return WallEntry{}, fmt.Errorf("allow proxy %w", err)
		}
		e.Flags |= WallProxy
		e.ProxyFamily, e.ProxyAddr, e.ProxyPort = p.Family, p.Addr, p.Port
	}
	if len(r.Forwards) > 0 && (!r.Loopback || r.HostNetwork) {
		return WallEntry{}, fmt.Errorf("allow forwarders: they live on the run's own loopback, which these rules do not grant")
	}
	if len(r.Forwards) > MaxWallForwards {
		return WallEntry{}, fmt.Errorf("allow forwarders: %d endpoints, at most %d", len(r.Forwards), MaxWallForwards)
	}
	for i, ap := range r.Forwards {
		f, err := endpoint(ap)
		if err != nil {
			return WallEntry{}, fmt.Errorf("allow forwarder %w", err)
		}
		e.Forwards[i] = f
	}
	e.NForwards = uint32(len(r.Forwards))
	if r.HostNetwork {
		e.Flags |= WallAll
	}
	if r.Loopback {
		e.Flags |= WallLoopback
		e.NetnsCookie = r.NetnsCookie
	}
	return e, nil
}
