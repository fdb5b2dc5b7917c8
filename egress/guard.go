package egress

import (
	"net/netip"
)

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

// The IPv6 forms that carry an IPv4 address a gateway then reaches.
var (
	// nat64 is the well-known NAT64 prefix (RFC 6052): the IPv4 address
	// is the last 32 bits.
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
	// sixToFour is 6to4 (RFC 3056): the IPv4 address is bits 16-47.
	sixToFour = netip.MustParsePrefix("2002::/16")
	// teredo is Teredo (RFC 4380): the server's IPv4 address is bits
	// 32-63, the client's the last 32 bits, inverted.
	teredo = netip.MustParsePrefix("2001::/32")
)

// KindOwn is the kind of an address of one of the host's own interfaces.
const KindOwn = "the host's own"

// verdict is why the rebinding guard refuses an address.
type verdict struct {
	kind  string     // "loopback", "private", KindOwn, ...
	form  string     // "6to4", "Teredo", "NAT64", or "" for the address itself
	inner netip.Addr // the IPv4 address a form embeds
}

// reason is the denial's reason for a name that resolved to a:
// "resolves to loopback address 127.0.0.2", "resolves to 6to4 address
// 2002:a00:1:: (it embeds private address 10.0.0.1)".
func (v verdict) reason(a netip.Addr) string {
	s := "resolves to " + v.kind + " address " + a.String()
	if v.form != "" {
		s = "resolves to " + v.form + " address " + a.String() + " (it embeds " + v.kind + " address " + v.inner.String() + ")"
	}
	return s
}

// classify judges a, an address a name resolved to: the zero verdict for a
// public address. own reports the host's own addresses (nil: none).
// IPv4-mapped addresses are judged as the IPv4 address; NAT64, 6to4 and
// Teredo addresses by the IPv4 addresses they carry as well; an address
// with a zone is always refused.
func classify(a netip.Addr, own func(netip.Addr) bool) verdict {
	a = a.Unmap()
	if a.Zone() != "" {
		return verdict{kind: "scoped"}
	}
	if k := plain(a, own); k != "" {
		return verdict{kind: k}
	}
	if !a.Is6() {
		return verdict{}
	}
	b := a.As16()
	var embedded []struct {
		form string
		v4   netip.Addr
	}
	add := func(form string, x [4]byte) {
		embedded = append(embedded, struct {
			form string
			v4   netip.Addr
		}{form, netip.AddrFrom4(x)})
	}
	switch {
	case nat64.Contains(a):
		add("NAT64", [4]byte{b[12], b[13], b[14], b[15]})
	case sixToFour.Contains(a):
		add("6to4", [4]byte{b[2], b[3], b[4], b[5]})
	case teredo.Contains(a):
		add("Teredo", [4]byte{b[4], b[5], b[6], b[7]})
		add("Teredo", [4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
	}
	for _, e := range embedded {
		if k := plain(e.v4, own); k != "" {
			return verdict{kind: k, form: e.form, inner: e.v4}
		}
	}
	return verdict{}
}

// plain is the kind of a (unmapped, no zone) by the special ranges and the
// host's own addresses, or "".
func plain(a netip.Addr, own func(netip.Addr) bool) string {
	for _, r := range specialRanges {
		if r.prefix.Contains(a) {
			return r.kind
		}
	}
	if own != nil && own(a) {
		return KindOwn
	}
	return ""
}

// special returns what kind of non-public address a is ("loopback",
// "private", ...), or "" for a public one, knowing no host address.
func special(a netip.Addr) string { return classify(a, nil).kind }
