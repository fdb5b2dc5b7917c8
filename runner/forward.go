package runner

import (
	"fmt"
	"io"
	"net/netip"
	"sync"

	"github.com/sbx-sandbox/sbx/egress"
)

// forwardBase is the first address of the name forwarders: each allowed
// name gets the next free address from here, in 127.0.1.0/24 of the
// sandbox's own loopback, apart from the proxy's and the DNS answerer's
// 127.0.0.1 (addresses IP rules name are skipped).
var forwardBase = netip.MustParseAddr("127.0.1.1")

// maxForwardNames bounds the names given forwarders (one address each),
// wildcard matches included.
const maxForwardNames = 200

// forwarders are the transparent endpoints of one run, for clients that
// ignore the proxy variables (Node's fetch, the JVM, ssh): every allowed
// name gets a loopback address of the sandbox, which sbx's DNS answers
// for it, with a listener on each port the rules allow it; every allowed
// IP address gets a listener on that same address and port. Each
// connection is forwarded by the proxy after its checks
// (egress.Proxy.ServeForward).
type forwarders struct {
	ns    *egress.Netns
	p     *egress.Proxy
	allow egress.Allowlist
	log   io.Writer
	// wall: the BPF network wall limits the sandbox to its loopback (and
	// the proxy), so an allowed address beyond loopback gets no
	// forwarder (a client's connect to it would be refused by the wall
	// before reaching one); it is reached through the proxy.
	wall bool

	mu     sync.Mutex
	warned bool // about a name beyond maxForwardNames
	names  map[string]netip.Addr
	next   netip.Addr
	taken  map[netip.Addr]bool // addresses IP rules name
}

func newForwarders(ns *egress.Netns, p *egress.Proxy, allow egress.Allowlist, log io.Writer, wall bool) *forwarders {
	f := &forwarders{ns: ns, p: p, allow: allow, log: log, wall: wall, names: map[string]netip.Addr{}, next: forwardBase, taken: map[netip.Addr]bool{}}
	for _, r := range allow {
		if r.IsIP() {
			f.taken[r.Addr()] = true
		}
	}
	return f
}

// start opens the forwarders of the allowed IP addresses and of the names
// the rules name exactly (not "localhost": libc answers it from
// /etc/hosts, and WithLocalhost made it IP rules). Wildcard matches get
// theirs when the DNS is asked (lookup).
func (f *forwarders) start() error {
	if err := f.forwardIPs(); err != nil {
		return err
	}
	for _, r := range f.allow {
		if r.IsIP() || r.Wildcard() || r.Name() == "localhost" {
			continue
		}
		if _, err := f.forName(r.Name()); err != nil {
			return err
		}
	}
	return nil
}

// lookup is the DNS answerer's: the address of an allowed name's
// forwarder, opened now for a name only a wildcard rule allows.
func (f *forwarders) lookup(name string) (netip.Addr, bool) {
	if len(f.allow.NamePorts(name)) == 0 {
		return netip.Addr{}, false
	}
	a, err := f.forName(name)
	if err != nil {
		f.mu.Lock()
		if !f.warned {
			f.warned = true
			fmt.Fprintf(f.log, "sbx: warning: egress forwarder for %s: %v\n", name, err)
		}
		f.mu.Unlock()
		return netip.Addr{}, false
	}
	return a, true
}

// forName returns name's forwarder address, giving it one and listening
// there on each port allowed for it if it has none yet.
func (f *forwarders) forName(name string) (netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a, ok := f.names[name]; ok {
		return a, nil
	}
	if len(f.names) == maxForwardNames {
		return netip.Addr{}, fmt.Errorf("more than %d allowed names", maxForwardNames)
	}
	for f.taken[f.next] {
		f.next = f.next.Next()
	}
	a := f.next
	f.next = f.next.Next()
	f.names[name] = a
	for _, port := range f.allow.NamePorts(name) {
		ln, err := f.ns.Listen(netip.AddrPortFrom(a, port).String())
		if err != nil {
			return netip.Addr{}, fmt.Errorf("egress forwarder for %s:%d: %w", name, port, err)
		}
		go func() { _ = f.p.ServeForward(ln, name, port) }()
	}
	return a, nil
}

// forwardIPs listens, for each allowed IP address and port, on that same
// address and port in the sandbox's namespace (adding the address to its
// lo unless it is loopback, which lo has already), so that a client that
// dials the literal (127.0.0.1:11434 for a model server on the host's
// loopback, 10.0.0.5:5432) reaches the host's destination at the same
// address. The proxy's own 127.0.0.1:3128 is left to the proxy, and with
// the BPF wall (root) the addresses beyond loopback are too (see wall).
func (f *forwarders) forwardIPs() error {
	added := map[netip.Addr]bool{}
	for _, r := range f.allow {
		if !r.IsIP() {
			continue
		}
		a, port := r.Addr(), r.Port()
		ap := netip.AddrPortFrom(a, port)
		if ap == proxyAddr || (f.wall && !a.IsLoopback()) || canaryRange(a) {
			continue
		}
		if !a.IsLoopback() && !added[a] {
			if err := f.ns.AddLoopbackAddr(a); err != nil {
				return fmt.Errorf("egress forwarder for %s: %w", r, err)
			}
			added[a] = true
		}
		ln, err := f.ns.Listen(ap.String())
		if err != nil {
			return fmt.Errorf("egress forwarder for %s: %w", r, err)
		}
		go func() { _ = f.p.ServeForward(ln, a.String(), port) }()
	}
	return nil
}

// canaryRanges are the documentation ranges (RFC 5737 TEST-NET-1, RFC
// 3849) that the shim's network canary dials to prove that nothing beyond
// loopback answers (bpf/net_canary.go): never put on the sandbox's lo,
// which would defeat that proof. Nothing real lives there; a rule for one
// is served by the proxy alone.
var canaryRanges = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24"), netip.MustParsePrefix("2001:db8::/32")}

func canaryRange(a netip.Addr) bool {
	for _, p := range canaryRanges {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
