package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults of the [Proxy] limits.
const (
	DefaultConnectTimeout = 10 * time.Second
	DefaultIdleTimeout    = 5 * time.Minute
	DefaultHeaderTimeout  = 10 * time.Second
	DefaultMaxTunnels     = 256
	DefaultMaxConns       = 512
	DefaultMaxHeaderBytes = 32 << 10
)

// ErrClosed is returned by [Proxy.Serve] once [Proxy.Close] was called.
var ErrClosed = errors.New("egress proxy closed")

// Resolver looks names up; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer opens the upstream connections; *net.Dialer is one.
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// OwnAddrs tells the host's own addresses; *HostAddrs is one.
type OwnAddrs interface {
	// Own reports whether a is an address of one of the host's
	// interfaces; an error refuses the destination.
	Own(a netip.Addr) (bool, error)
}

// DenialKind says what kind of refusal a [Denial] is, for the hint sbx
// gives with it.
type DenialKind uint8

// The kinds of denials.
const (
	// DenyOther: a malformed request or a limit.
	DenyOther DenialKind = iota
	// DenyNotAllowed: no rule allows the destination.
	DenyNotAllowed
	// DenyAddress: the name is allowed, but resolves to an address the
	// DNS-rebinding guard refuses (loopback, private, the host's own, ...).
	DenyAddress
)

// Denial is one request the proxy refused.
type Denial struct {
	// Host is the destination asked for: a lowercase name, an IP address,
	// or the printable part of a malformed target.
	Host string
	// Port is the destination port (0 if there was none).
	Port uint16
	// Reason says why, briefly: "not allowed", "resolves to loopback
	// address 127.0.0.1", "too many tunnels: limit 256", "invalid host".
	// It may hold the printable part of what the sandbox sent.
	Reason string
	// Kind is the kind of refusal.
	Kind DenialKind
}

// Target is host:port, IPv6 in brackets.
func (d Denial) Target() string { return net.JoinHostPort(d.Host, strconv.Itoa(int(d.Port))) }

// String is "connect HOST:PORT (REASON)", as sbx prints it after
// "sbx: denied ".
func (d Denial) String() string { return "connect " + d.Target() + " (" + d.Reason + ")" }

// Proxy is an HTTP proxy that lets through only the destinations of its
// allowlist: CONNECT tunnels (TLS) and plain HTTP forwarding of
// absolute-form requests (see the package doc for the rules). Set the
// fields, then call [Proxy.Serve]; the fields must not change afterwards.
// The zero value is a proxy that refuses everything.
type Proxy struct {
	// Allow is the set of allowed destinations.
	Allow Allowlist
	// Resolver resolves allowed names (net.DefaultResolver if nil).
	Resolver Resolver
	// Dialer connects to the checked addresses (a net.Dialer if nil).
	Dialer Dialer
	// Own tells the host's own addresses, which no name may resolve to
	// (the DNS-rebinding guard). If nil, the proxy watches the addresses
	// of the network namespace Serve is first called in
	// ([WatchHostAddrs]) until Close.
	Own OwnAddrs

	// ConnectTimeout bounds name resolution plus connecting upstream
	// ([DefaultConnectTimeout] if 0).
	ConnectTimeout time.Duration
	// IdleTimeout ends a tunnel or forwarded exchange in which no byte
	// moved in either direction for that long, and closes idle client
	// connections ([DefaultIdleTimeout] if 0).
	IdleTimeout time.Duration
	// HeaderTimeout bounds reading a request's headers
	// ([DefaultHeaderTimeout] if 0).
	HeaderTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers
	// ([DefaultMaxHeaderBytes] if 0; larger ones get 431).
	MaxHeaderBytes int
	// MaxTunnels caps concurrent upstream exchanges: open CONNECT tunnels
	// plus forwarded requests in flight ([DefaultMaxTunnels] if 0; one
	// more gets 503).
	MaxTunnels int
	// MaxConns caps open client connections ([DefaultMaxConns] if 0):
	// beyond it the proxy stops accepting until one closes.
	MaxConns int

	// Report, if set, is called for every refused destination, from the
	// connection's goroutine (so concurrently; keep it short), never after
	// Close returned.
	Report func(Denial)

	once    sync.Once
	initErr error
	ownedW  *HostAddrs // the watch init opened (closed by Close)
	ctx     context.Context
	cancel  context.CancelFunc
	srv     *http.Server
	fwd     *httputil.ReverseProxy
	tr      *http.Transport
	slots   chan struct{} // tunnel slots
	conns   chan struct{} // client connection slots

	mu      sync.Mutex
	closed  bool
	tunnels map[*tunnel]struct{}
	wg      sync.WaitGroup // handlers at work
}

func (p *Proxy) init() error {
	p.once.Do(func() {
		switch {
		case p.ConnectTimeout < 0, p.IdleTimeout < 0, p.HeaderTimeout < 0:
			p.initErr = errors.New("egress proxy: negative timeout")
			return
		case p.MaxTunnels < 0, p.MaxConns < 0, p.MaxHeaderBytes < 0:
			p.initErr = errors.New("egress proxy: negative limit")
			return
		}
		def(&p.ConnectTimeout, DefaultConnectTimeout)
		def(&p.IdleTimeout, DefaultIdleTimeout)
		def(&p.HeaderTimeout, DefaultHeaderTimeout)
		def(&p.MaxHeaderBytes, DefaultMaxHeaderBytes)
		def(&p.MaxTunnels, DefaultMaxTunnels)
		def(&p.MaxConns, DefaultMaxConns)
		if p.Resolver == nil {
			p.Resolver = net.DefaultResolver
		}
		if p.Dialer == nil {
			p.Dialer = &net.Dialer{}
		}
		if p.Own == nil {
			w, err := WatchHostAddrs()
			if err != nil {
				p.initErr = fmt.Errorf("egress proxy: %w", err)
				return
			}
			p.Own, p.ownedW = w, w
		}
		p.ctx, p.cancel = context.WithCancel(context.Background())
		p.slots = make(chan struct{}, p.MaxTunnels)
		p.conns = make(chan struct{}, p.MaxConns)
		p.tunnels = map[*tunnel]struct{}{}
		quiet := log.New(io.Discard, "", 0)
		p.srv = &http.Server{
			Handler:                      handler{p},
			ReadHeaderTimeout:            p.HeaderTimeout,
			IdleTimeout:                  p.IdleTimeout,
			MaxHeaderBytes:               p.MaxHeaderBytes,
			ErrorLog:                     quiet,
			BaseContext:                  func(net.Listener) context.Context { return p.ctx },
			DisableGeneralOptionsHandler: true,
		}
		p.tr = &http.Transport{
			Proxy:                  nil, // never another proxy
			DialContext:            p.dialForward,
			MaxIdleConns:           16,
			MaxIdleConnsPerHost:    4,
			IdleConnTimeout:        min(p.IdleTimeout, 90*time.Second),
			ResponseHeaderTimeout:  p.IdleTimeout,
			ExpectContinueTimeout:  time.Second,
			MaxResponseHeaderBytes: 1 << 20,
			DisableCompression:     true, // pass Accept-Encoding as the client sent it
		}
		p.fwd = &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.Out.Host = "" // the Host header follows the checked URL
			},
			Transport:     p.tr,
			FlushInterval: -1, // stream (server-sent events)
			BufferPool:    bufferPool{},
			ErrorLog:      quiet,
			ErrorHandler:  p.forwardError,
		}
	})
	return p.initErr
}

func def[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

// Serve accepts client connections on ln until [Proxy.Close] and serves
// them. ln is closed when Serve returns. It may be called for several
// listeners. It returns [ErrClosed] after Close.
func (p *Proxy) Serve(ln net.Listener) error {
	if err := p.init(); err != nil {
		ln.Close()
		return err
	}
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		ln.Close()
		return ErrClosed
	}
	err := p.srv.Serve(&limitListener{Listener: ln, slots: p.conns, done: p.ctx.Done()})
	if errors.Is(err, http.ErrServerClosed) {
		return ErrClosed
	}
	return err
}

// Close stops the listeners, ends every tunnel and client connection and
// waits for the requests being served to finish. It is safe to call more
// than once.
func (p *Proxy) Close() error {
	_ = p.init()
	if p.srv == nil { // invalid settings: nothing was started
		return nil
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	tunnels := make([]*tunnel, 0, len(p.tunnels))
	for t := range p.tunnels {
		tunnels = append(tunnels, t)
	}
	p.mu.Unlock()
	p.cancel()
	err := p.srv.Close()
	for _, t := range tunnels {
		t.close()
	}
	p.tr.CloseIdleConnections()
	p.wg.Wait()
	p.tr.CloseIdleConnections()
	if p.ownedW != nil {
		p.ownedW.Close()
	}
	return err
}

// enter registers a handler at work; false once the proxy is closed.
func (p *Proxy) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.wg.Add(1)
	return true
}

// acquire takes a tunnel slot without waiting.
func (p *Proxy) acquire() bool {
	select {
	case p.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (p *Proxy) release() { <-p.slots }

// handler dispatches the proxy's requests.
type handler struct{ p *Proxy }

func (h handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.p.enter() {
		plainError(w, http.StatusServiceUnavailable, "shutting down")
		return
	}
	defer h.p.wg.Done()
	switch {
	case r.Method == http.MethodConnect:
		h.p.connect(w, r)
	case r.URL.IsAbs():
		h.p.forward(w, r)
	default:
		plainError(w, http.StatusBadRequest, "not a proxy request (send CONNECT host:port, or an absolute http:// URL)")
	}
}

// refusal is a request the proxy will not carry out, with the status
// the client gets. Reported refusals are passed to Proxy.Report.
type refusal struct {
	status int
	reason string
	report bool
	kind   DenialKind
}

func (e *refusal) Error() string { return e.reason }

func deny(status int, reason string) *refusal {
	return &refusal{status: status, reason: reason, report: true}
}

// refuse answers a refused request and reports it.
func (p *Proxy) refuse(w http.ResponseWriter, host string, port uint16, e *refusal) {
	if e.report && p.Report != nil {
		p.Report(Denial{Host: host, Port: port, Reason: e.reason, Kind: e.kind})
	}
	w.Header().Set("Connection", "close")
	plainError(w, e.status, net.JoinHostPort(host, strconv.Itoa(int(port)))+": "+e.reason)
}

func plainError(w http.ResponseWriter, status int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	io.WriteString(w, "sbx egress proxy: "+msg+"\n")
}

// checkTarget parses and normalizes a request's host and port and checks
// them against the allowlist. host is returned normalized (lowercase name
// or IP address); on error, the printable part of the input.
func (p *Proxy) checkTarget(host, port string, defPort uint16) (string, uint16, *refusal) {
	n := defPort
	if port != "" || defPort == 0 {
		var err error
		if n, err = parsePort(port); err != nil {
			return printable(host), 0, deny(http.StatusBadRequest, "invalid port")
		}
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return printable(host), n, deny(http.StatusBadRequest, "invalid host")
		}
		host = a.Unmap().String()
	} else {
		name, err := normalizeName(host)
		if err != nil {
			return printable(host), n, deny(http.StatusBadRequest, "invalid host")
		}
		host = name
	}
	if !p.Allow.Allows(host, n) {
		ref := deny(http.StatusForbidden, "not allowed")
		ref.kind = DenyNotAllowed
		return host, n, ref
	}
	return host, n, nil
}

// addrs returns the addresses to dial for the allowed host:port: the
// address itself for an IP (an IP rule named it: the user's explicit
// choice, whatever the address), else the name's addresses, all of which
// must pass the DNS-rebinding guard (checkResolved).
func (p *Proxy) addrs(ctx context.Context, host string, port uint16) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a.Unmap()}, nil // allowed literally by checkTarget
	}
	found, err := p.Resolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(found) == 0 {
		if ctx.Err() != nil {
			return nil, &refusal{status: http.StatusGatewayTimeout, reason: "name resolution timed out"}
		}
		return nil, &refusal{status: http.StatusBadGateway, reason: "cannot resolve host"}
	}
	out := make([]netip.Addr, 0, len(found))
	for _, a := range found {
		a = a.Unmap()
		if ref := p.checkResolved(a, port); ref != nil {
			return nil, ref
		}
		if !containsAddr(out, a) {
			out = append(out, a)
		}
	}
	return out, nil
}

// checkResolved is the DNS-rebinding guard, the one check of every
// address an allowed name resolved to, for CONNECT, forwarded requests and
// the transparent forwarders alike: a loopback, private, link-local,
// multicast or reserved address, one of the host's own, or a NAT64, 6to4
// or Teredo address carrying one of those, is refused unless an IP rule
// names that exact address and port.
func (p *Proxy) checkResolved(a netip.Addr, port uint16) *refusal {
	var ownErr error
	own := func(x netip.Addr) bool {
		ok, err := p.Own.Own(x)
		if err != nil && ownErr == nil {
			ownErr = err
		}
		return ok || err != nil
	}
	v := classify(a, own)
	if v.kind == "" || p.Allow.allowsAddr(a, port) {
		return nil
	}
	if ownErr != nil {
		return deny(http.StatusBadGateway, "cannot check the address "+a.String()+": "+ownErr.Error())
	}
	ref := deny(http.StatusForbidden, v.reason(a))
	ref.kind = DenyAddress
	return ref
}

func containsAddr(list []netip.Addr, a netip.Addr) bool {
	for _, b := range list {
		if a == b {
			return true
		}
	}
	return false
}

// dial connects to the checked destination host:port (host as returned by
// checkTarget), trying its addresses in order within ConnectTimeout.
func (p *Proxy) dial(ctx context.Context, host string, port uint16) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, p.ConnectTimeout)
	defer cancel()
	list, err := p.addrs(ctx, host, port)
	if err != nil {
		return nil, err
	}
	var last error
	for _, a := range list {
		c, err := p.Dialer.DialContext(ctx, "tcp", netip.AddrPortFrom(a, port).String())
		if err == nil {
			return c, nil
		}
		last = err
		if ctx.Err() != nil {
			break
		}
	}
	if ctx.Err() != nil && p.ctx.Err() == nil {
		return nil, &refusal{status: http.StatusGatewayTimeout, reason: "connect timed out"}
	}
	return nil, &refusal{status: http.StatusBadGateway, reason: "cannot connect: " + errText(last)}
}

// errText is err's message without the Go-internal prefixes of net errors.
func errText(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err.Error()
	}
	if err == nil {
		return "no address"
	}
	return err.Error()
}

// printable keeps at most 64 bytes of s, with anything but printable ASCII
// replaced by '?': the text comes from the sandbox and ends up on a terminal.
func printable(s string) string {
	if len(s) > 64 {
		s = s[:64]
	}
	return strings.Map(func(r rune) rune {
		if r < ' ' || r > '~' {
			return '?'
		}
		return r
	}, s)
}
