package egress

import "net/netip"

// specialRange is a block of addresses that is not the public internet.
type specialRange struct {
	prefix netip.Prefix
	kind   string
}

// specialRanges are the destinations a name may not resolve to unless the
// exact address is allowed by an IP rule: they reach the host itself, its
// local networks or the cloud metadata service (169.254.169.254, fd00:ec2::254),
// which is what a DNS-rebinding attack aims at.
var specialRanges = func() []specialRange {
	list := []struct{ cidr, kind string }{
		{"0.0.0.0/8", "unspecified"},
		{"10.0.0.0/8", "private"},
		{"100.64.0.0/10", "carrier-grade NAT"},
		{"127.0.0.0/8", "loopback"},
		{"169.254.0.0/16", "link-local"},
		{"172.16.0.0/12", "private"},
		{"192.0.0.0/24", "reserved"},
		{"192.168.0.0/16", "private"},
		{"198.18.0.0/15", "reserved"},
		{"224.0.0.0/4", "multicast"},
		{"255.255.255.255/32", "broadcast"},
		{"240.0.0.0/4", "reserved"},
		{"::/128", "unspecified"},
		{"::1/128", "loopback"},
		{"::/96", "reserved"}, // IPv4-compatible, deprecated
		{"64:ff9b:1::/48", "private"},
		{"fc00::/7", "private"},
		{"fe80::/10", "link-local"},
		{"fec0::/10", "private"}, // site-local, deprecated
		{"ff00::/8", "multicast"},
	}
	out := make([]specialRange, len(list))
	for i, e := range list {
		out[i] = specialRange{netip.MustParsePrefix(e.cidr), e.kind}
	}
	return out
}()

// nat64 is the well-known NAT64 prefix: its addresses carry an IPv4
// address in the last 32 bits, which a NAT64 gateway then reaches.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// special returns what kind of non-public address a is ("loopback",
// "private", ...), or "" for a public one. IPv4-mapped and NAT64 addresses
// are judged by the IPv4 address they carry; an address with a zone is
// always special.
func special(a netip.Addr) string {
	a = a.Unmap()
	if a.Zone() != "" {
		return "scoped"
	}
	if nat64.Contains(a) {
		b := a.As16()
		a = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	for _, r := range specialRanges {
		if r.prefix.Contains(a) {
			return r.kind
		}
	}
	return ""
}
