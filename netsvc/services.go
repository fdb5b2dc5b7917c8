package netsvc

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/sbx-sandbox/sbx/egress"
	"github.com/sbx-sandbox/sbx/internal/safetext"
	"github.com/sbx-sandbox/sbx/policy"
	"github.com/sbx-sandbox/sbx/report"
)

// ProxyAddr is where the egress proxy listens inside every sandbox. The
// sandbox's network namespace is its own and empty, so a fixed port never
// clashes, and it can go into the environment before the sandbox exists.
// IPv4 on purpose: the shim's network canary expects AF_INET6 TCP sockets
// to stay denied.
var ProxyAddr = netip.MustParseAddrPort("127.0.0.1:3128")

// proxyEnv is what points the sandbox's programs at the proxy: curl, git,
// Python, Go (both cases; curl reads only lowercase http_proxy) and Node
// 22.21+ (NODE_USE_ENV_PROXY). NO_PROXY keeps the sandbox's own loopback
// direct (its test servers), see noProxy.
func ProxyEnv(allow egress.Allowlist) []string {
	u := "http://" + ProxyAddr.String()
	var env []string
	for _, k := range []string{"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"} {
		env = append(env, k+"="+u, strings.ToLower(k)+"="+u)
	}
	if local := noProxy(allow); local != "" {
		env = append(env, "NO_PROXY="+local, "no_proxy="+local)
	}
	return append(env, "NODE_USE_ENV_PROXY=1")
}

// noProxy is the NO_PROXY list: localhost, 127.0.0.1 and ::1 go to the
// sandbox's own loopback directly, except those an allow rule names
// (--allow-host 127.0.0.1:11434 for a model server on the host's
// loopback): NO_PROXY knows no ports, and an entry there would send every
// client to the sandbox's loopback, where the host's server is not, so
// the rule could never work. Without the entry, clients that honour the
// proxy variables reach every port of that host through the proxy, which
// lets only the allowed ones through.
func noProxy(allow egress.Allowlist) string {
	named := map[string]bool{}
	for _, r := range allow {
		switch {
		case r.IsIP():
			named[r.Addr().String()] = true
		case !r.Wildcard():
			named[r.Name()] = true
		}
	}
	var keep []string
	for _, h := range []string{"localhost", "127.0.0.1", "::1"} {
		if !named[h] {
			keep = append(keep, h)
		}
	}
	return strings.Join(keep, ",")
}

// egressProxy is one run's allowlist proxy: listening in the sandbox's
// network namespace, dialing out from sbx's. It lives in sbx's process, so
// it dies with sbx.
type egressProxy struct {
	p      *egress.Proxy
	own    *egress.HostAddrs
	served chan error
}

// proxyHint is the hint given with the first denial of the proxy, by its
// kind: --allow-host only for what no rule allows. A name that was allowed
// but resolved to an address the guard refuses gets no --allow-host advice
// for that name (it was given already), and refusals for limits or
// malformed requests get none.
func proxyHint(d egress.Denial) string {
	switch d.Kind {
	case egress.DenyNotAllowed:
		t := safetext.Escape(d.Target())
		return fmt.Sprintf("sbx: to let the program reach %s, run sbx with --allow-host %s\n", t, t)
	case egress.DenyAddress:
		return fmt.Sprintf("sbx: %s is allowed, but its name %s; sbx refuses such addresses to names (DNS rebinding). Only an --allow-host rule naming that address itself lets it through\n",
			safetext.Escape(d.Target()), safetext.Escape(d.Reason))
	}
	return ""
}

// startEgress opens the proxy's listener in the sandbox's network
// namespace and serves it. The network wall's exception for the endpoint
// (netPolicy) is the caller's. Call it after sandbox.Create and before Exec.
func startEgress(ns *egress.Netns, allow egress.Allowlist, rep *report.Reporter) (*egressProxy, error) {
	// The host's own addresses, as sbx's namespace (where the proxy
	// dials from) has them.
	own, err := egress.WatchHostAddrs()
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	ln, err := ns.Listen(ProxyAddr.String())
	if err != nil {
		own.Close()
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	p := &egress.Proxy{
		Allow:    allow,
		Resolver: testResolver(),
		Own:      own,
		Report: func(d egress.Denial) {
			v := report.Violation{
				Time: time.Now(), Op: "connect", Target: d.Target(),
				Errno: "EACCES", Tier: "proxy", Reason: d.Reason,
			}
			rep.AddHinted(v, proxyHint(d))
		},
	}
	e := &egressProxy{p: p, own: own, served: make(chan error, 1)}
	go func() { e.served <- p.Serve(ln) }()
	return e, nil
}

// Config is what a run's network services serve.
type Config struct {
	// Loopback is --net loopback: the DNS answerer, and with Allow the
	// forwarders of the allowed names and addresses.
	Loopback bool
	// Allow is --allow-host: the egress proxy serves it.
	Allow egress.Allowlist
	// Publish are the --publish listeners.
	Publish []Publish
	// Rootless: a helper in the sandbox's user namespace opens the sockets.
	Rootless bool
	// Log receives sbx's warnings.
	Log io.Writer
	// Report is told of every connection and name the services refuse.
	Report *report.Reporter
}

// Start starts what serves the sandbox's network namespace from
// sbx's side (root and rootless alike): under --net loopback the DNS
// answerer (NXDOMAIN for every name but the allowed ones), and with
// --allow-host the egress proxy and the transparent forwarders of the
// allowed names and addresses, and the --publish listeners. Rootless, a helper in the sandbox's user
// namespace opens their sockets (egress.OpenNetns): no BPF is involved,
// and the namespace, which holds nothing but lo, is the wall. The
// returned func stops it all. pid is the sandbox's PID 1.
func Start(pid int, c Config) (func(), error) {
	if !c.Loopback && len(c.Allow) == 0 && len(c.Publish) == 0 {
		return func() {}, nil
	}
	rootless, rep := c.Rootless, c.Report
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	ns, err := egress.OpenNetns(pid, rootless)
	if err != nil {
		return nil, fmt.Errorf("sandbox network: %w", err)
	}
	stops = append(stops, func() { _ = ns.Close() })
	var lookup func(string) (netip.Addr, bool) // allowed names' addresses in the sandbox
	var why dnsRefusal = noNames
	if len(c.Allow) > 0 {
		px, err := startEgress(ns, c.Allow, rep)
		if err != nil {
			stop()
			return nil, err
		}
		stops = append(stops, func() { px.close(c.Log) })
		if c.Loopback {
			wallLimit := policy.MaxWallForwards
			if rootless {
				wallLimit = 0
			}
			fw := newForwarders(ns, px.p, c.Allow, c.Log, wallLimit)
			if err := fw.start(); err != nil {
				stop()
				return nil, err
			}
			lookup, why = fw.lookup, fw.refusal
		}
	}
	if c.Loopback {
		// A name lookup fails at once (NXDOMAIN), and is reported; an
		// allowed name gets the address of its forwarder.
		dns, err := startDNS(ns, rep, lookup, why)
		if err != nil {
			stop()
			return nil, err
		}
		stops = append(stops, func() { dns.stop(c.Log) })
	}
	if len(c.Publish) > 0 {
		pub, err := startPublish(ns, c.Publish)
		if err != nil {
			stop()
			return nil, err
		}
		stops = append(stops, pub.close)
	}
	return stop, nil
}

// close ends every tunnel and connection.
func (e *egressProxy) close(log io.Writer) {
	e.p.Close()
	e.own.Close()
	if err := <-e.served; err != nil && !errors.Is(err, egress.ErrClosed) {
		fmt.Fprintf(log, "sbx: warning: egress proxy: %v\n", err)
	}
}

// Info is sbx doctor's line on the network a run gets here, root
// or rootless: every mode works both ways; what differs is who opens the
// sockets in the sandbox's namespace and what the wall is.
func Info(rootless bool) string {
	if rootless {
		return "--net loopback (default), none, host; --allow-host and --publish through a helper in the sandbox's user namespace (proxy, DNS answerer, forwarders); the empty namespace is the wall (no denial reports for direct connects); the canary run below starts the helper"
	}
	return "--net loopback (default), none, host; --allow-host and --publish served in the sandbox's namespace (proxy, DNS answerer, forwarders); the BPF wall refuses and reports the rest"
}
