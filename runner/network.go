package runner

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"

	"github.com/sbx-sandbox/sbx/bpf/netwall"
	"github.com/sbx-sandbox/sbx/egress"
	"github.com/sbx-sandbox/sbx/netsvc"
	"github.com/sbx-sandbox/sbx/policy"
	"github.com/sbx-sandbox/sbx/report"
	"github.com/sbx-sandbox/sbx/sandbox"
	"golang.org/x/sys/unix"
)

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
		n.Proxy, n.Forwards = netsvc.ProxyAddr, netsvc.WallForwards(o.allow)
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

// parsePublish checks o.Publish into o.publish: well formed, under --net
// loopback only (with none the program has no inet socket to serve on,
// with host its listener is on the host already), each host address once.
func (o *Options) parsePublish() error {
	seen := map[netip.AddrPort]bool{}
	for _, s := range o.Publish {
		p, err := netsvc.ParsePublish(s)
		if err != nil {
			return fmt.Errorf("--publish %w", err)
		}
		if !o.loopback() {
			return fmt.Errorf("--publish %s: needs --net loopback (the default), not --net %s", s, o.Net)
		}
		if seen[p.Host] {
			return fmt.Errorf("--publish %s: %s is published twice", s, p.Host)
		}
		seen[p.Host] = true
		o.publish = append(o.publish, p)
	}
	return nil
}

// startNetwork starts the run's network services (see netsvc.Start):
// none with the host network.
func (o *Options) startNetwork(sb *sandbox.Sandbox, rootless bool, rep *report.Reporter) (func(), error) {
	if o.hostNetwork() {
		return func() {}, nil
	}
	return netsvc.Start(sb.Pid(), netsvc.Config{
		Loopback: o.loopback(),
		Allow:    o.allow,
		Publish:  o.publish,
		Rootless: rootless,
		Log:      o.Log,
		Report:   rep,
	})
}
