package runner

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/sbx-sandbox/sbx/bpf/netwall"
	"github.com/sbx-sandbox/sbx/egress"
	"github.com/sbx-sandbox/sbx/internal/safetext"
	"github.com/sbx-sandbox/sbx/policy"
	"github.com/sbx-sandbox/sbx/report"
	"github.com/sbx-sandbox/sbx/sandbox"
	"golang.org/x/sys/unix"
)

// proxyAddr is where the egress proxy listens inside every sandbox. The
// sandbox's network namespace is its own and empty, so a fixed port never
// clashes, and it can go into the environment before the sandbox exists.
// IPv4 on purpose: the shim's network canary expects AF_INET6 TCP sockets
// to stay denied.
var proxyAddr = netip.MustParseAddrPort("127.0.0.1:3128")

// proxyEnv is what points the sandbox's programs at the proxy: curl, git,
// Python, Go (both cases; curl reads only lowercase http_proxy) and Node
// 22.21+ (NODE_USE_ENV_PROXY). NO_PROXY keeps the sandbox's own loopback
// direct (its test servers), see noProxy.
func proxyEnv(allow egress.Allowlist) []string {
	u := "http://" + proxyAddr.String()
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
	ln, err := ns.Listen(proxyAddr.String())
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

// startNetwork starts what serves the sandbox's network namespace from
// sbx's side (root and rootless alike): under --net loopback the DNS
// answerer (NXDOMAIN for every name but the allowed ones), and with
// --allow-host the egress proxy and the transparent forwarders of the
// allowed names and addresses, and the --publish listeners. Rootless, a helper in the sandbox's user
// namespace opens their sockets (egress.OpenNetns): no BPF is involved,
// and the namespace, which holds nothing but lo, is the wall. The
// returned func stops it all.
func (o *Options) startNetwork(sb *sandbox.Sandbox, rootless bool, rep *report.Reporter) (func(), error) {
	if o.hostNetwork() || (!o.loopback() && len(o.allow) == 0 && len(o.publish) == 0) {
		return func() {}, nil
	}
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	ns, err := egress.OpenNetns(sb.Pid(), rootless)
	if err != nil {
		return nil, fmt.Errorf("sandbox network: %w", err)
	}
	stops = append(stops, func() { _ = ns.Close() })
	var lookup func(string) (netip.Addr, bool) // allowed names' addresses in the sandbox
	var why dnsRefusal = noNames
	if len(o.allow) > 0 {
		px, err := startEgress(ns, o.allow, rep)
		if err != nil {
			stop()
			return nil, err
		}
		stops = append(stops, func() { px.close(o.Log) })
		if o.loopback() {
			wallLimit := policy.MaxWallForwards
			if rootless {
				wallLimit = 0
			}
			fw := newForwarders(ns, px.p, o.allow, o.Log, wallLimit)
			if err := fw.start(); err != nil {
				stop()
				return nil, err
			}
			lookup, why = fw.lookup, fw.refusal
		}
	}
	if o.loopback() {
		// A name lookup fails at once (NXDOMAIN), and is reported; an
		// allowed name gets the address of its forwarder.
		dns, err := startDNS(ns, rep, lookup, why)
		if err != nil {
			stop()
			return nil, err
		}
		stops = append(stops, func() { dns.stop(o.Log) })
	}
	if len(o.publish) > 0 {
		pub, err := startPublish(ns, o.publish)
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

// netPolicy is the run's exception to the network walls (root): the host
// network (--net host), or the sandbox's own loopback (--net loopback,
// limited to the namespace of the sandbox whose PID 1 is pid) with the
// forwarders' endpoints beyond loopback on it, and the egress proxy's
// endpoint (--allow-host), or none.
func (o *Options) netPolicy(pid int) (netwall.Policy, error) {
	n := policy.Network{Mode: policy.NetNone}
	switch {
	case o.hostNetwork():
		n.Mode = policy.NetHost
	case o.loopback():
		n.Mode = policy.NetLoopback
	}
	if len(o.allow) > 0 {
		n.Proxy, n.Forwards = proxyAddr, wallForwards(o.allow)
	}
	var cookie uint64
	if n.Mode == policy.NetLoopback {
		c, err := egress.NetnsCookie("/proc/" + strconv.Itoa(pid) + "/ns/net")
		switch {
		case errors.Is(err, unix.ENOPROTOOPT):
			// Before Linux 5.14: the wall then takes any namespace but
			// the host's for the sandbox's.
		case err != nil:
			return netwall.Policy{}, fmt.Errorf("network wall: %w", err)
		}
		cookie = c
	}
	return n.Wall(cookie), nil
}

// netCanary is the proof the shim runs before the program (see
// sandbox.ShimConfig.NetCanary): with the host network there is no wall
// to prove; rootless, seccomp refuses inet sockets itself (EPERM) under
// --net none without --allow-host, and otherwise the empty namespace is
// the wall.
func (o *Options) netCanary(rootless bool) string {
	switch {
	case o.hostNetwork():
		return ""
	case !o.loopback() && (!rootless || len(o.allow) == 0):
		return sandbox.NetCanaryNoInet
	case rootless:
		// With --allow-host rootless --net none has inet sockets too
		// (for the proxy): the empty namespace is the proof.
		return sandbox.NetCanaryLoopbackNetns
	}
	return sandbox.NetCanaryLoopbackWall
}

// EgressInfo is sbx doctor's line on the network a run gets here, root
// or rootless: every mode works both ways; what differs is who opens the
// sockets in the sandbox's namespace and what the wall is.
func EgressInfo(rootless bool) string {
	if rootless {
		return "--net loopback (default), none, host; --allow-host and --publish through a helper in the sandbox's user namespace (proxy, DNS answerer, forwarders); the empty namespace is the wall (no denial reports for direct connects); the canary run below starts the helper"
	}
	return "--net loopback (default), none, host; --allow-host and --publish served in the sandbox's namespace (proxy, DNS answerer, forwarders); the BPF wall refuses and reports the rest"
}
