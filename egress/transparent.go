package egress

import (
	"errors"
	"net"
	"strconv"
	"time"
)

// ServeForward accepts TCP connections on ln and forwards each, as it is,
// to host:port: a transparent endpoint for clients that ignore the proxy
// variables (Node's fetch before 22.21, the JVM, git over ssh). sbx listens
// on a loopback address of the sandbox that its DNS gives out for host, so
// the client believes it connects to host itself. Each connection goes
// through the proxy's own checks (the allowlist, the DNS-rebinding guard,
// the tunnel limit and timeouts) as a CONNECT to host:port would; a
// refusal is reported and the connection closed. It returns when the
// proxy is closed (ErrClosed) or ln fails.
func (p *Proxy) ServeForward(ln net.Listener, host string, port uint16) error {
	if err := p.init(); err != nil {
		ln.Close()
		return err
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-p.ctx.Done():
			ln.Close()
		case <-stop:
		}
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if p.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return ErrClosed
			}
			return err
		}
		if !p.enter() {
			c.Close()
			return ErrClosed
		}
		go func() {
			defer p.wg.Done()
			p.forwardConn(c, host, port)
		}()
	}
}

// forwardConn checks host:port, dials it and moves bytes until either side
// is done.
func (p *Proxy) forwardConn(client net.Conn, host string, port uint16) {
	refuse := func(h string, n uint16, e *refusal) {
		if e.report && p.Report != nil {
			p.Report(Denial{Host: h, Port: n, Reason: e.reason, Kind: e.kind})
		}
		client.Close()
	}
	h, n, ref := p.checkTarget(host, strconv.Itoa(int(port)), 0)
	if ref != nil {
		refuse(h, n, ref)
		return
	}
	if !p.acquire() {
		refuse(h, n, deny(503, "too many tunnels: limit "+strconv.Itoa(p.MaxTunnels)))
		return
	}
	defer p.release()
	up, err := p.dial(p.ctx, h, n)
	if err != nil {
		refuse(h, n, asRefusal(err))
		return
	}
	p.runTunnel(client, up, func() error { return client.SetDeadline(time.Time{}) })
}
