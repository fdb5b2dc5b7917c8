package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// DefaultPort is the port of a rule that names none: egress is for TLS.
const DefaultPort = 443

// maxHostLen is the longest DNS name (RFC 1035), without the trailing dot.
const maxHostLen = 253

// Rule is one allowed destination: a host name, every subdomain of a name
// ("*.example.com"), or an IP address, each with one port. Build it with
// [ParseRule]; the zero Rule matches nothing.
type Rule struct {
	name     string     // lowercase, no trailing dot; "" for an IP rule
	wildcard bool       // name is the parent of the allowed subdomains
	addr     netip.Addr // IP rule (unmapped, no zone)
	port     uint16
}

// ParseRule parses HOST[:PORT], as given to --allow-host:
//
//	api.example.com          the name api.example.com, port 443
//	api.example.com:8443     the name, port 8443
//	*.example.com            every subdomain of example.com at any depth
//	                         (a.example.com, a.b.example.com), port 443, but
//	                         NOT example.com itself: allow it separately
//	10.1.2.3:443, 10.1.2.3   an IPv4 address
//	[::1]:8080, [::1], ::1   an IPv6 address
//
// Names are case-insensitive and a trailing dot is ignored. Names must be
// ASCII (use the punycode form, xn--...) letters, digits and hyphens, with
// a last label that starts with a letter, so that "127.1" or "2130706433"
// can never pass for a name. URLs, CIDR ranges, ports out of 1-65535,
// wildcards other than a leading "*." and zones are refused.
func ParseRule(s string) (Rule, error) {
	r, err := parseRule(s)
	if err != nil {
		return Rule{}, fmt.Errorf("allow host %q: %w", s, err)
	}
	return r, nil
}

func parseRule(s string) (Rule, error) {
	switch {
	case s == "":
		return Rule{}, errors.New("empty")
	case strings.Contains(s, "://"):
		return Rule{}, errors.New("want HOST[:PORT], not a URL")
	case strings.ContainsAny(s, "/"):
		return Rule{}, errors.New("want HOST[:PORT] (no paths or CIDR ranges)")
	case strings.ContainsAny(s, "@?#"):
		return Rule{}, errors.New("want HOST[:PORT]")
	case strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r >= 0x7f }):
		return Rule{}, errors.New("spaces, control or non-ASCII characters (write international names in punycode, xn--...)")
	}
	// A bare IPv6 address has colons but no port.
	if a, err := netip.ParseAddr(s); err == nil {
		return ipRule(a, DefaultPort)
	}
	host, port := s, uint16(DefaultPort)
	if strings.HasPrefix(s, "[") || strings.Contains(s, ":") {
		if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
			host = s[1 : len(s)-1]
		} else {
			h, p, err := net.SplitHostPort(s)
			if err != nil {
				return Rule{}, errors.New("want HOST[:PORT] (IPv6 as [ADDR]:PORT)")
			}
			if port, err = parsePort(p); err != nil {
				return Rule{}, err
			}
			host = h
		}
		if strings.HasPrefix(s, "[") {
			a, err := netip.ParseAddr(host)
			if err != nil || !a.Is6() {
				return Rule{}, errors.New("brackets hold an IPv6 address")
			}
			return ipRule(a, port)
		}
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return ipRule(a, port)
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok && !strings.Contains(rest, "*") {
		name, err := normalizeName(rest)
		if err != nil {
			return Rule{}, err
		}
		if !strings.Contains(name, ".") {
			return Rule{}, fmt.Errorf("wildcard *.%s would allow a whole top-level domain", name)
		}
		return Rule{name: name, wildcard: true, port: port}, nil
	}
	if strings.Contains(host, "*") {
		return Rule{}, errors.New(`a wildcard is only allowed as a leading "*." label (*.example.com)`)
	}
	name, err := normalizeName(host)
	if err != nil {
		return Rule{}, err
	}
	return Rule{name: name, port: port}, nil
}

func ipRule(a netip.Addr, port uint16) (Rule, error) {
	if a.Zone() != "" {
		return Rule{}, errors.New("IPv6 zones are not supported")
	}
	a = a.Unmap()
	if a.IsUnspecified() {
		return Rule{}, errors.New("the unspecified address cannot be a destination")
	}
	return Rule{addr: a, port: port}, nil
}

// parsePort parses a decimal port in 1-65535.
func parsePort(p string) (uint16, error) {
	if p == "" || strings.TrimLeft(p, "0123456789") != "" {
		return 0, fmt.Errorf("port %q: want a number in 1-65535", p)
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("port %q: want a number in 1-65535", p)
	}
	return uint16(n), nil
}

// normalizeName lowercases a DNS name, drops one trailing dot and checks
// its syntax (letters, digits, hyphens; labels of 1-63 bytes; a last label
// starting with a letter).
func normalizeName(s string) (string, error) {
	s = strings.ToLower(strings.TrimSuffix(s, "."))
	if s == "" {
		return "", errors.New("empty host name")
	}
	if len(s) > maxHostLen {
		return "", fmt.Errorf("host name longer than %d bytes", maxHostLen)
	}
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return "", fmt.Errorf("host name %q: each label needs 1-63 characters", s)
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return "", fmt.Errorf("host name %q: a label cannot start or end with '-'", s)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return "", fmt.Errorf("host name %q: only letters, digits, '-' and '.' are allowed", s)
			}
		}
	}
	if last := labels[len(labels)-1]; last[0] < 'a' || last[0] > 'z' {
		return "", fmt.Errorf("host name %q: not a name (the last label must start with a letter) nor an IP address", s)
	}
	return s, nil
}

// IsIP reports whether r names an IP address rather than host names.
func (r Rule) IsIP() bool { return r.addr.IsValid() }

// Addr is the address of an IP rule (invalid for a name rule).
func (r Rule) Addr() netip.Addr { return r.addr }

// Name is the host name of a name rule, lowercase without a trailing dot
// ("" for an IP rule; the parent domain for a wildcard rule, see
// [Rule.Wildcard]).
func (r Rule) Name() string { return r.name }

// Wildcard reports whether r allows the subdomains of r.Name().
func (r Rule) Wildcard() bool { return r.wildcard }

// Port is the rule's port.
func (r Rule) Port() uint16 { return r.port }

// String returns the rule in the form ParseRule reads, always with the
// port: "api.example.com:443", "*.example.com:443", "[::1]:8080".
func (r Rule) String() string {
	switch {
	case r.addr.IsValid():
		return netip.AddrPortFrom(r.addr, r.port).String()
	case r.wildcard:
		return "*." + r.name + ":" + strconv.Itoa(int(r.port))
	case r.name != "":
		return r.name + ":" + strconv.Itoa(int(r.port))
	}
	return ""
}

// matchName reports whether r allows the normalized name at port.
func (r Rule) matchName(name string, port uint16) bool {
	if r.port != port || r.name == "" {
		return false
	}
	if r.wildcard {
		return strings.HasSuffix(name, "."+r.name)
	}
	return name == r.name
}

// matchAddr reports whether r is an IP rule for exactly a (unmapped) and port.
func (r Rule) matchAddr(a netip.Addr, port uint16) bool {
	return r.addr.IsValid() && r.port == port && r.addr == a
}

// Allowlist is the set of destinations a proxy lets through. The zero value
// allows nothing.
type Allowlist []Rule

// ParseAllowlist parses each entry with [ParseRule].
func ParseAllowlist(entries []string) (Allowlist, error) {
	a := make(Allowlist, 0, len(entries))
	for _, e := range entries {
		r, err := ParseRule(e)
		if err != nil {
			return nil, err
		}
		a = append(a, r)
	}
	return a, nil
}

// Allows reports whether host:port is allowed. host is a name (case and a
// trailing dot do not matter) or an IP address (IPv6 without brackets). A
// name is matched against the name rules only and an address against the
// IP rules only: an address never passes because a name rule exists, even
// if the name resolves to it. Malformed hosts are not allowed.
func (a Allowlist) Allows(host string, port uint16) bool {
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.Zone() == "" && a.allowsAddr(ip.Unmap(), port)
	}
	name, err := normalizeName(host)
	if err != nil {
		return false
	}
	return a.allowsName(name, port)
}

func (a Allowlist) allowsName(name string, port uint16) bool {
	for _, r := range a {
		if r.matchName(name, port) {
			return true
		}
	}
	return false
}

// allowsAddr reports whether an IP rule names exactly ip (unmapped) at port.
func (a Allowlist) allowsAddr(ip netip.Addr, port uint16) bool {
	for _, r := range a {
		if r.matchAddr(ip, port) {
			return true
		}
	}
	return false
}

// Strings returns the rules as ParseRule reads them.
func (a Allowlist) Strings() []string {
	s := make([]string, len(a))
	for i, r := range a {
		s[i] = r.String()
	}
	return s
}

// NamePorts returns the ports the name rules allow for name (a wildcard
// rule counts for its subdomains), in rule order without repeats; none
// for a malformed name or an IP address.
func (a Allowlist) NamePorts(name string) []uint16 {
	if _, err := netip.ParseAddr(name); err == nil {
		return nil
	}
	name, err := normalizeName(name)
	if err != nil {
		return nil
	}
	var ports []uint16
	for _, r := range a {
		if r.matchName(name, r.port) && !slices.Contains(ports, r.port) {
			ports = append(ports, r.port)
		}
	}
	return ports
}

// WithLocalhost returns a with, for each rule "localhost:PORT", the rules
// of the host's loopback addresses at that port (127.0.0.1 and ::1, what
// localhost means on the host) unless a already has them: the name means
// the host's own loopback, which only IP rules can allow (the
// DNS-rebinding guard refuses loopback addresses to name rules).
func (a Allowlist) WithLocalhost() Allowlist {
	out := slices.Clone(a)
	for _, r := range a {
		if r.IsIP() || r.wildcard || r.name != "localhost" {
			continue
		}
		for _, ip := range []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()} {
			if !out.allowsAddr(ip, r.port) {
				out = append(out, Rule{addr: ip, port: r.port})
			}
		}
	}
	return out
}
