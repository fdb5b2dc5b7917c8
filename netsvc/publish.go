package netsvc

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"

	"github.com/sbx-sandbox/sbx/egress"
)

// Publish is one --publish: a host address where sbx listens, and the
// port of the sandbox's loopback each connection is forwarded to.
type Publish struct {
	Host    netip.AddrPort
	Sandbox uint16
}

// ParsePublish parses --publish [ADDR:]PORT[:SANDBOX_PORT] (the docker
// run -p convention): the host side listens on ADDR (127.0.0.1 unless
// given: never beyond this machine unless the user names an address;
// [::1] in brackets) at PORT, and forwards to the sandbox's loopback at
// SANDBOX_PORT (PORT unless given).
func ParsePublish(s string) (Publish, error) {
	host := netip.AddrFrom4([4]byte{127, 0, 0, 1})
	rest := s
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]:")
		if end < 0 {
			return Publish{}, fmt.Errorf("%q: want [ADDR]:PORT[:SANDBOX_PORT]", s)
		}
		a, err := netip.ParseAddr(s[1:end])
		if err != nil || !a.Is6() || a.Zone() != "" {
			return Publish{}, fmt.Errorf("%q: %q is not an IPv6 address", s, s[1:end])
		}
		host, rest = a, s[end+2:]
	}
	parts := strings.Split(rest, ":")
	if len(parts) == 3 && host.Is4() && !strings.HasPrefix(s, "[") {
		a, err := netip.ParseAddr(parts[0])
		if err != nil || !a.Is4() {
			return Publish{}, fmt.Errorf("%q: %q is not an IPv4 address (IPv6 in brackets: [::1]:8080:80)", s, parts[0])
		}
		host, parts = a, parts[1:]
	}
	if len(parts) < 1 || len(parts) > 2 {
		return Publish{}, fmt.Errorf("%q: want [ADDR:]PORT[:SANDBOX_PORT]", s)
	}
	var ports []uint16
	for _, p := range parts {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return Publish{}, fmt.Errorf("%q: port %q: want 1-65535", s, p)
		}
		ports = append(ports, uint16(n))
	}
	sb := ports[0]
	if len(ports) == 2 {
		sb = ports[1]
	}
	return Publish{Host: netip.AddrPortFrom(host, ports[0]), Sandbox: sb}, nil
}

// publisher serves the --publish listeners of one run.
type publisher struct {
	ns  *egress.Netns
	lns []net.Listener
	wg  sync.WaitGroup

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]bool
}

// startPublish listens on each host address and forwards every connection
// to the sandbox's loopback at the published port (127.0.0.1, else ::1),
// dialed from inside the sandbox's namespace. A listener that cannot be
// opened (the port is taken on the host) fails the run before the program
// starts.
func startPublish(ns *egress.Netns, pubs []Publish) (*publisher, error) {
	p := &publisher{ns: ns, conns: map[net.Conn]bool{}}
	for _, pub := range pubs {
		ln, err := net.Listen("tcp", pub.Host.String())
		if err != nil {
			p.close()
			return nil, fmt.Errorf("--publish %s: %w", pub.Host, err)
		}
		p.lns = append(p.lns, ln)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.serve(ln, pub.Sandbox)
		}()
	}
	return p, nil
}

func (p *publisher) serve(ln net.Listener, port uint16) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.forward(c, port)
		}()
	}
}

// forward connects c to the sandbox's port and copies both ways (io.Copy
// between two TCP connections splices on Linux) until both sides are done.
func (p *publisher) forward(c net.Conn, port uint16) {
	in, err := p.ns.Dial(netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), port).String())
	if err != nil {
		in, err = p.ns.Dial(netip.AddrPortFrom(netip.IPv6Loopback(), port).String())
	}
	if err != nil || !p.track(c, in) {
		c.Close()
		if in != nil {
			in.Close()
		}
		return
	}
	defer p.untrack(c, in)
	done := make(chan struct{})
	go func() {
		defer close(done)
		copyHalf(in, c)
	}()
	copyHalf(c, in)
	<-done
}

// copyHalf copies src to dst and then half-closes dst (or closes both
// when that is not possible).
func copyHalf(dst, src net.Conn) {
	_, err := io.Copy(dst, src)
	cw, ok := dst.(interface{ CloseWrite() error })
	if err != nil || !ok || cw.CloseWrite() != nil {
		dst.Close()
		src.Close()
	}
}

func (p *publisher) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range cs {
		p.conns[c] = true
	}
	return true
}

func (p *publisher) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		c.Close()
		delete(p.conns, c)
	}
}

// close stops the listeners and ends every connection.
func (p *publisher) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	for _, ln := range p.lns {
		ln.Close()
	}
	p.wg.Wait()
}
