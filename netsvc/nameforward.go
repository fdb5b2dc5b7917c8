package netsvc

import (
	"fmt"
	"io"
	"net/netip"
	"sync"

	"github.com/sbx-sandbox/sbx/canary"
	"github.com/sbx-sandbox/sbx/egress"
	"github.com/sbx-sandbox/sbx/internal/safetext"
	"github.com/sbx-sandbox/sbx/policy"
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
	// wallLimit, with the BPF network wall (root), is how many allowed
	// addresses beyond loopback get a forwarder: the wall lets the
	// sandbox connect to those endpoints alone (policy.MaxWallForwards);
	// the rest are reached through the proxy. 0: no limit (rootless, the
	// empty namespace is the wall).
	wallLimit int

	mu     sync.Mutex
	warned bool // about a name beyond maxForwardNames
	names  map[string]netip.Addr
	next   netip.Addr
	taken  map[netip.Addr]bool // addresses IP rules name
}

func newForwarders(ns *egress.Netns, p *egress.Proxy, allow egress.Allowlist, log io.Writer, wallLimit int) *forwarders {
	f := &forwarders{ns: ns, p: p, allow: allow, log: log, wallLimit: wallLimit, names: map[string]netip.Addr{}, next: forwardBase, taken: map[netip.Addr]bool{}}
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

// refusal is the DNS answerer's dnsRefusal for a run with --allow-host: a
// name no rule allows is "not allowed" (with the --allow-host hint); an
// allowed one that got no address is the forwarders' limit or failure, for
// which --allow-host is no advice.
func (f *forwarders) refusal(name string) (string, string) {
	n := safetext.Escape(name)
	if len(f.allow.NamePorts(name)) == 0 {
		return "not allowed", fmt.Sprintf("sbx: to let the program reach %s, run sbx with --allow-host %s[:PORT]\n", n, n)
	}
	f.mu.Lock()
	full := len(f.names) >= maxForwardNames
	f.mu.Unlock()
	if full {
		return fmt.Sprintf("allowed, but the sandbox's DNS answers at most %d allowed names", maxForwardNames),
			fmt.Sprintf("sbx: the sandbox's DNS gives addresses to at most %d allowed names, and %s came later; clients that use the proxy (HTTPS_PROXY) still reach it\n", maxForwardNames, n)
	}
	return "allowed, but its forwarder could not be opened", ""
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
			fmt.Fprintf(f.log, "sbx: warning: egress forwarder for %s: %s\n", safetext.Escape(name), safetext.Escape(err.Error()))
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

// forwardIPs listens, for each allowed IP address and port (ipForwards),
// on that same address and port in the sandbox's namespace (adding the
// address to its lo unless it is loopback, which lo has already), so that
// a client that dials the literal (127.0.0.1:11434 for a model server on
// the host's loopback, 10.0.0.5:5432) reaches the host's destination at
// the same address. With the BPF wall only the first wallLimit addresses
// beyond loopback get one (the wall's exceptions, wallForwards), and a
// warning names the rest.
func (f *forwarders) forwardIPs() error {
	local, beyond := ipForwards(f.allow)
	if f.wallLimit > 0 && len(beyond) > f.wallLimit {
		rest := beyond[f.wallLimit:]
		beyond = beyond[:f.wallLimit]
		which := rest[0].String() + " is"
		if len(rest) > 1 {
			which = fmt.Sprintf("%s and %d more are", rest[0], len(rest)-1)
		}
		fmt.Fprintf(f.log, "sbx: warning: --allow-host: the network wall holds %d endpoints beyond loopback; %s reached through the proxy only (HTTPS_PROXY), not dialed directly\n", f.wallLimit, which)
	}
	added := map[netip.Addr]bool{}
	for _, ap := range append(local, beyond...) {
		a := ap.Addr()
		if !a.IsLoopback() && !added[a] {
			if err := f.ns.AddLoopbackAddr(a); err != nil {
				return fmt.Errorf("egress forwarder for %s: %w", ap, err)
			}
			added[a] = true
		}
		ln, err := f.ns.Listen(ap.String())
		if err != nil {
			return fmt.Errorf("egress forwarder for %s: %w", ap, err)
		}
		go func() { _ = f.p.ServeForward(ln, a.String(), ap.Port()) }()
	}
	return nil
}

// ipForwards are the endpoints of the allowed IP addresses that get a
// forwarder on the same address and port in the sandbox, in rule order:
// the loopback ones, and those beyond loopback, which sbx puts on the
// sandbox's lo. The proxy's own 127.0.0.1:3128 is left to the proxy, and
// the addresses the shim's loopback canary dials to prove that nothing
// beyond loopback answers (canary.Outside4, Outside6) are never put on lo,
// nor multicast addresses: a rule for one is served by the proxy alone.
func ipForwards(allow egress.Allowlist) (local, beyond []netip.AddrPort) {
	for _, r := range allow {
		if !r.IsIP() {
			continue
		}
		ap := netip.AddrPortFrom(r.Addr(), r.Port())
		switch a := ap.Addr(); {
		case ap == ProxyAddr || a == canary.Outside4 || a == canary.Outside6 || a.IsMulticast():
		case a.IsLoopback():
			local = append(local, ap)
		default:
			beyond = append(beyond, ap)
		}
	}
	return local, beyond
}

// wallForwards are the forwarder endpoints beyond loopback that the BPF
// wall lets a root run connect to: the first policy.MaxWallForwards of
// ipForwards (forwardIPs serves the same ones).
func WallForwards(allow egress.Allowlist) []netip.AddrPort {
	_, beyond := ipForwards(allow)
	if len(beyond) > policy.MaxWallForwards {
		beyond = beyond[:policy.MaxWallForwards]
	}
	return beyond
}
