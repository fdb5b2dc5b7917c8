package lsm

import (
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/bpf/events"
	"github.com/sbx-sandbox/sbx/bpf/internal/bpftest"
	"github.com/sbx-sandbox/sbx/policy"
)

// tcpListener accepts (and drains) connections on 127.0.0.1 and returns
// its port.
func tcpListener(t *testing.T) int {
	t.Helper()
	return int(listenAt(t, netip.MustParseAddr("127.0.0.1")).Port())
}

// connectedTCP is a TCP socket connected to 127.0.0.1:port outside the
// sandbox, as one that leaked in.
func connectedTCP(t *testing.T, port int) []*os.File {
	t.Helper()
	c, err := net.Dial("tcp4", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.(*net.TCPConn).File()
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return []*os.File{f}
}

// TestLSMProxy: with AllowNet and a proxy, a sandboxed task reaches exactly the
// proxy endpoint over TCP; any other port, UDP, a bind, and a leaked-in
// socket connected elsewhere stay refused. Before AllowProxy the same
// connect to the proxy is refused; with HostNetwork everything works; outside the sandbox every one of
// them works (the controls).
func TestLSMProxy(t *testing.T) {
	e := newLSMEnv(t)
	proxy, other := tcpListener(t), tcpListener(t)
	ps, op := strconv.Itoa(proxy), strconv.Itoa(other)

	if got, _ := lsmHelper(t, e.cgroup, nil, "tcp", ps); got != "socket: EPERM" {
		t.Fatalf("before AllowNet: tcp to the proxy = %q, want socket: EPERM", got)
	}
	for _, args := range [][]string{{"tcp", ps}, {"tcp", op}, {"socket", "2", "2"}} {
		if got, _ := lsmHelper(t, "", nil, args...); got != "ok" {
			t.Fatalf("control outside the sandbox: %v = %q, want ok", args, got)
		}
	}
	if got, _ := lsmHelper(t, "", connectedTCP(t, other), "send", "3"); got != "ok" {
		t.Fatalf("control outside the sandbox: send on a connected socket = %q, want ok", got)
	}

	if err := e.lsm.AllowNet(e.id, policy.WallRules{Proxy: netip.MustParseAddrPort("127.0.0.1:" + ps)}); err != nil {
		t.Fatalf("AllowNet: %v", err)
	}
	for _, c := range []struct {
		name  string
		args  []string
		files func(t *testing.T) []*os.File
		want  string
	}{
		{"tcp to the proxy", []string{"tcp", ps}, nil, "ok"},
		{"tcp to another port", []string{"tcp", op}, nil, "connect: EPERM"},
		{"udp socket", []string{"socket", "2", "2"}, nil, "EPERM"},
		{"inet6 tcp socket", []string{"socket", "10", "1"}, nil, "EPERM"},
		{"leaked socket connected elsewhere", []string{"send", "3"}, func(t *testing.T) []*os.File { return connectedTCP(t, other) }, "EPERM"},
		{"leaked socket connected to the proxy", []string{"send", "3"}, func(t *testing.T) []*os.File { return connectedTCP(t, proxy) }, "ok"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var files []*os.File
			if c.files != nil {
				files = c.files(t)
			}
			if got, _ := lsmHelper(t, e.cgroup, files, c.args...); got != c.want {
				t.Errorf("in the sandbox: %v = %q, want %q", c.args, got, c.want)
			}
		})
	}
	if err := e.lsm.AllowNet(12345, policy.WallRules{Proxy: netip.MustParseAddrPort("127.0.0.1:" + ps)}); err == nil {
		t.Errorf("AllowNet of an unregistered sandbox: want an error")
	}

	// The host network: everything goes.
	if err := e.lsm.AllowNet(e.id, policy.WallRules{HostNetwork: true}); err != nil {
		t.Fatalf("AllowNet host network: %v", err)
	}
	for _, args := range [][]string{{"tcp", op}, {"socket", "2", "2"}, {"socket", "10", "1"}} {
		if got, _ := lsmHelper(t, e.cgroup, nil, args...); got != "ok" {
			t.Errorf("with the host network: %v = %q, want ok", args, got)
		}
	}
}

// unixListener listens on a pathname unix socket of type typ in dir (in
// the test's network namespace: the host's, to the sandboxed helper) and
// returns its path.
func unixListener(t *testing.T, dir string, typ string) string {
	t.Helper()
	path := filepath.Join(dir, typ+".sock")
	if typ == "unixgram" {
		c, err := net.ListenUnixgram(typ, &net.UnixAddr{Name: path, Net: typ})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return path
	}
	ln, err := net.Listen(typ, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return path
}

// TestLSMUnixPeer: a sandboxed task in its own network namespace (as in
// sbx run) cannot connect or send to a unix socket of another namespace
// (a host daemon's socket file in its workspace), while its own sockets
// work; outside the sandbox, the same connects work (the control).
func TestLSMUnixPeer(t *testing.T) {
	e := newLSMEnv(t)
	stream := unixListener(t, e.ws, "unix")
	dgram := unixListener(t, e.ws, "unixgram")
	for _, args := range [][]string{{"netns", "unix", stream}, {"netns", "unixdgram", dgram}} {
		if got, _ := lsmHelper(t, "", nil, args...); got != "ok" {
			t.Fatalf("control outside the sandbox: %v = %q, want ok", args, got)
		}
	}
	for _, c := range []struct {
		name string
		args []string
		want string
		path string // of the reported denial
	}{
		{"stream to the host", []string{"netns", "unix", stream}, "EPERM", stream},
		{"datagram to the host", []string{"netns", "unixdgram", dgram}, "EPERM", dgram},
		{"own socket", []string{"netns", "unixself", e.ws}, "ok", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, pid := lsmHelper(t, e.cgroup, nil, c.args...)
			if got != c.want {
				t.Fatalf("in the sandbox: %v = %q, want %q", c.args, got, c.want)
			}
			if c.path == "" {
				return
			}
			ev := e.wantEvent(t, events.OpSocketConnect, pid, pathIs(c.path))
			if ev.Errno != unix.EPERM || ev.Family != unix.AF_UNIX || ev.Target() != c.path {
				t.Errorf("event %+v: want EPERM, AF_UNIX, target %s", ev, c.path)
			}
		})
	}
}

// listenAt accepts TCP connections on a, reads each until its peer
// closes it, and returns its address and port.
func listenAt(t *testing.T, a netip.Addr) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp", netip.AddrPortFrom(a, 0).String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(io.Discard, c)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).AddrPort()
}

// TestLSMLoopback: with AllowNet and loopback, a sandboxed task connects to
// and sends on (the socket's peer decides) TCP sockets to 127.0.0.1 and
// ::1 of its own namespace; without it both are refused. Outside the
// sandbox both answer (the controls).
func TestLSMLoopback(t *testing.T) {
	e := newLSMEnv(t)
	for _, a := range []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()} {
		ap := listenAt(t, a)
		if got, _ := lsmHelper(t, "", nil, "dial", ap.String()); got != "ok" {
			t.Fatalf("control outside the sandbox: dial %s = %q, want ok", ap, got)
		}
		for _, c := range []struct {
			name string
			p    policy.WallRules
			want string
		}{
			{"loopback", policy.WallRules{Loopback: true}, "ok"},
			{"no exception", policy.WallRules{Proxy: netip.MustParseAddrPort("127.0.0.1:1")}, "connect: EPERM"},
		} {
			t.Run(a.String()+"/"+c.name, func(t *testing.T) {
				if err := e.lsm.AllowNet(e.id, c.p); err != nil {
					t.Fatalf("AllowNet: %v", err)
				}
				want := c.want
				if a.Is6() && c.want != "ok" {
					want = "socket: EPERM" // the proxy's family is IPv4
				}
				if got, _ := lsmHelper(t, e.cgroup, nil, "dial", ap.String()); got != want {
					t.Errorf("in the sandbox: dial %s = %q, want %q", ap, got, want)
				}
			})
		}
	}
}

// TestLSMForward: with AllowNet, loopback and a forwarder endpoint (an
// address beyond loopback that sbx puts on the sandbox's lo), a sandboxed
// task connects a TCP socket to exactly that endpoint; another port of the
// same address is refused, and so is the endpoint itself for a run with
// loopback alone. Outside the sandbox both listeners answer (the controls).
func TestLSMForward(t *testing.T) {
	e := newLSMEnv(t)
	for _, a := range bpftest.HostAddrs(t) {
		allowed, other := listenAt(t, a), listenAt(t, a)
		for _, ap := range []netip.AddrPort{allowed, other} {
			if got, _ := lsmHelper(t, "", nil, "dial", ap.String()); got != "ok" {
				t.Fatalf("control outside the sandbox: dial %s = %q, want ok", ap, got)
			}
		}
		for _, c := range []struct {
			name string
			p    policy.WallRules
			ap   netip.AddrPort
			want string
		}{
			{"the endpoint", policy.WallRules{Loopback: true, Forwards: []netip.AddrPort{allowed}}, allowed, "ok"},
			{"another port", policy.WallRules{Loopback: true, Forwards: []netip.AddrPort{allowed}}, other, "connect: EPERM"},
			{"loopback alone", policy.WallRules{Loopback: true}, allowed, "connect: EPERM"},
		} {
			t.Run(a.String()+"/"+c.name, func(t *testing.T) {
				if err := e.lsm.AllowNet(e.id, c.p); err != nil {
					t.Fatalf("AllowNet: %v", err)
				}
				if got, _ := lsmHelper(t, e.cgroup, nil, "dial", c.ap.String()); got != c.want {
					t.Errorf("in the sandbox: dial %s = %q, want %q", c.ap, got, c.want)
				}
			})
		}
	}
}
