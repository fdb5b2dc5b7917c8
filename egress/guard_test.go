package egress

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/internal/sbxtest"
)

func TestSpecial(t *testing.T) {
	cases := []struct{ addr, want string }{
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"169.254.169.254", "link-local"}, // cloud metadata
		{"169.254.0.1", "link-local"},
		{"10.0.0.1", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"100.64.0.1", "carrier-grade NAT"},
		{"100.127.255.255", "carrier-grade NAT"},
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "unspecified"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"255.255.255.255", "broadcast"},
		{"240.0.0.1", "reserved"},
		{"192.0.0.170", "reserved"},
		{"198.18.0.1", "reserved"},
		{"::", "unspecified"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:169.254.169.254", "link-local"},
		{"::127.0.0.1", "reserved"},
		{"64:ff9b::a9fe:a9fe", "link-local"}, // NAT64 of 169.254.169.254
		{"64:ff9b::7f00:1", "loopback"},
		{"64:ff9b:1::1", "private"},
		{"fe80::1", "link-local"},
		{"febf::1", "link-local"},
		{"fc00::1", "private"},
		{"fd00:ec2::254", "private"}, // AWS IPv6 metadata
		{"fec0::1", "private"},
		{"ff02::1", "multicast"},
		{"fe80::1%eth0", "scoped"},
		// Public: these are values only, nothing is sent to them.
		{"8.8.8.8", ""},
		{"172.32.0.1", ""},
		{"100.128.0.1", ""},
		{"169.255.0.1", ""},
		{"1.1.1.1", ""},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::808:808", ""},
		{"2606:4700::1111", ""},
		{"2001:4860:4860::8888", ""},
	}
	for _, c := range cases {
		if got := special(netip.MustParseAddr(c.addr)); got != c.want {
			t.Errorf("special(%s) = %q, want %q", c.addr, got, c.want)
		}
	}
}

// TestClassify is the guard's table with the host's own addresses
// injected (203.0.113.9, 2001:db8::9, documentation addresses that no
// test sends anything to): each address itself, and each IPv6 form that
// carries an IPv4 address (mapped, compatible, NAT64, 6to4, Teredo) with
// a public, a private, a loopback and an own address inside.
func TestClassify(t *testing.T) {
	own := map[netip.Addr]bool{
		netip.MustParseAddr("203.0.113.9"): true,
		netip.MustParseAddr("2001:db8::9"): true,
	}
	isOwn := func(a netip.Addr) bool { return own[a] }
	cases := []struct {
		addr, kind, form, inner string
	}{
		// The host's own addresses, and their neighbours (public).
		{"203.0.113.9", KindOwn, "", ""},
		{"203.0.113.10", "", "", ""},
		{"2001:db8::9", KindOwn, "", ""},
		{"2001:db8::a", "", "", ""},
		// IPv4-mapped: the IPv4 address itself.
		{"::ffff:203.0.113.9", KindOwn, "", ""},
		{"::ffff:10.1.2.3", "private", "", ""},
		{"::ffff:203.0.113.10", "", "", ""},
		// IPv4-compatible (deprecated): all refused.
		{"::203.0.113.9", "reserved", "", ""},
		{"::8.8.8.8", "reserved", "", ""},
		// NAT64, well-known prefix: judged by the IPv4 address.
		{"64:ff9b::cb00:7109", KindOwn, "NAT64", "203.0.113.9"},
		{"64:ff9b::a01:203", "private", "NAT64", "10.1.2.3"},
		{"64:ff9b::7f00:1", "loopback", "NAT64", "127.0.0.1"},
		{"64:ff9b::808:808", "", "", ""},
		// NAT64, local-use prefix: all refused.
		{"64:ff9b:1::808:808", "private", "", ""},
		{"64:ff9b:1:ffff::cb00:7109", "private", "", ""},
		// 6to4: the IPv4 address in bits 16-47.
		{"2002:cb00:7109::1", KindOwn, "6to4", "203.0.113.9"},
		{"2002:a01:203::1", "private", "6to4", "10.1.2.3"},
		{"2002:7f00:1::", "loopback", "6to4", "127.0.0.1"},
		{"2002:a9fe:a9fe::1", "link-local", "6to4", "169.254.169.254"},
		{"2002:c0a8:101:1::1", "private", "6to4", "192.168.1.1"},
		{"2002:808:808::1", "", "", ""},
		// Teredo: the server in bits 32-63, the client inverted in the
		// last 32 bits.
		{"2001:0:cb00:7109::f7f7:f7f7", KindOwn, "Teredo", "203.0.113.9"},
		{"2001:0:a01:203::f7f7:f7f7", "private", "Teredo", "10.1.2.3"},
		{"2001:0:808:808:0:0:34ff:8ef6", KindOwn, "Teredo", "203.0.113.9"}, // client ^ ff = cb00:7109
		{"2001:0:808:808:0:0:80ff:fffe", "loopback", "Teredo", "127.0.0.1"},
		{"2001:0:808:808:0:0:f5fe:fdfc", "private", "Teredo", "10.1.2.3"},
		{"2001:0:808:808:0:0:f7f7:f7f7", "", "", ""}, // client 8.8.8.8
		// Neither Teredo nor 6to4: 2001:db8::/32 and 2001:1::/32.
		{"2001:1:a01:203::1", "", "", ""},
		// Zones are always refused.
		{"2001:db8::9%eth0", "scoped", "", ""},
	}
	for _, c := range cases {
		a := netip.MustParseAddr(c.addr)
		v := classify(a, isOwn)
		if v.kind != c.kind || v.form != c.form || (c.inner != "" && v.inner.String() != c.inner) {
			t.Errorf("classify(%s) = %+v, want kind %q form %q inner %q", c.addr, v, c.kind, c.form, c.inner)
		}
		// Without the host's addresses, an own address is public.
		if c.kind == KindOwn {
			if v := classify(a, nil); v.kind != "" {
				t.Errorf("classify(%s, no own addresses) = %+v, want public", c.addr, v)
			}
		}
	}
	if got := classify(netip.MustParseAddr("2002:a01:203::1"), nil).reason(netip.MustParseAddr("2002:a01:203::1")); got != "resolves to 6to4 address 2002:a01:203::1 (it embeds private address 10.1.2.3)" {
		t.Errorf("6to4 reason %q", got)
	}
	if got := classify(netip.MustParseAddr("203.0.113.9"), isOwn).reason(netip.MustParseAddr("203.0.113.9")); got != "resolves to the host's own address 203.0.113.9" {
		t.Errorf("own reason %q", got)
	}
}

// TestHostAddrsWatch: the watch knows the host's loopback, and sees an
// address added to lo (and removed) from the next check on, without
// waiting. Root only: it changes the host's lo (a documentation address,
// removed at the end).
func TestHostAddrsWatch(t *testing.T) {
	h, err := WatchHostAddrs()
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if own, err := h.Own(netip.MustParseAddr("127.0.0.1")); err != nil || !own {
		t.Fatalf("Own(127.0.0.1) = %v, %v; want true", own, err)
	}
	// A route lookup, nothing sent: a documentation address is not local.
	for _, a := range []string{"203.0.113.1", "2001:db8::1"} {
		if own, err := h.Own(netip.MustParseAddr(a)); err != nil || own {
			t.Errorf("Own(%s) = %v, %v; want false", a, own, err)
		}
	}
	if local, err := routeLocal(netip.MustParseAddr("127.0.0.2")); err != nil || !local {
		t.Errorf("routeLocal(127.0.0.2) = %v, %v; want true", local, err)
	}
	if os.Geteuid() != 0 {
		sbxtest.Skip(t, sbxtest.Root, "adding an address to lo needs root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip command")
	}
	a := netip.MustParseAddr("198.51.100." + strconv.Itoa(100+os.Getpid()%100))
	if own, err := h.Own(a); err != nil || own {
		t.Fatalf("Own(%s) before adding it = %v, %v", a, own, err)
	}
	if out, err := exec.Command("ip", "addr", "add", a.String()+"/32", "dev", "lo").CombinedOutput(); err != nil {
		t.Fatalf("ip addr add: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "addr", "del", a.String()+"/32", "dev", "lo").Run() })
	if own, err := h.Own(a); err != nil || !own {
		t.Errorf("Own(%s) right after adding it = %v, %v; want true", a, own, err)
	}
	if h.fd < 0 {
		t.Error("no netlink subscription: the watch reads the addresses at every check")
	}
	if out, err := exec.Command("ip", "addr", "del", a.String()+"/32", "dev", "lo").CombinedOutput(); err != nil {
		t.Fatalf("ip addr del: %v: %s", err, out)
	}
	// A local route covers a prefix with no interface address (AnyIP):
	// its addresses are the host's own too.
	pfx := "198.51.100.240/28"
	if out, err := exec.Command("ip", "route", "add", "local", pfx, "dev", "lo").CombinedOutput(); err != nil {
		t.Fatalf("ip route add local %s: %v: %s", pfx, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "route", "del", "local", pfx, "dev", "lo").Run() })
	if own, err := h.Own(netip.MustParseAddr("198.51.100.245")); err != nil || !own {
		t.Errorf("Own(198.51.100.245) under a local route = %v, %v; want true", own, err)
	}
	if own, err := h.Own(netip.MustParseAddr("198.51.100.239")); err != nil || own {
		t.Errorf("Own(198.51.100.239) beside the local route = %v, %v; want false", own, err)
	}
	deadline := time.Now().Add(time.Second)
	for {
		own, err := h.Own(a)
		if err == nil && !own {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Own(%s) after removing it = %v, %v; want false", a, own, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ownSet is an OwnAddrs with fixed addresses, or a failure.
type ownSet struct {
	addrs map[netip.Addr]bool
	err   error
}

func (o ownSet) Own(a netip.Addr) (bool, error) { return o.addrs[a], o.err }

// TestRebindingGuardOwnAddress: an allowed name resolving to one of the
// host's own addresses (injected: 203.0.113.9), or a 6to4 or Teredo
// address carrying one, is refused and reported as such by CONNECT, by a
// forwarded request and by a transparent forwarder, before anything is
// dialed; an IP rule naming the address lets it through (the user's
// explicit choice), and a name resolving to a public address that is not
// the host's is dialed (the control; the test dialer refuses it, which
// is the 502). If the host's addresses cannot be read, every name is
// refused.
func TestRebindingGuardOwnAddress(t *testing.T) {
	echo := echoServer(t)
	port := strconv.Itoa(int(echo.Port()))
	p16 := uint16(echo.Port())
	hosts := map[string]string{
		"own.test":    "203.0.113.9",
		"six.test":    "2002:cb00:7109::1",
		"teredo.test": "2001:0:808:808:0:0:34ff:8ef6",
		"public.test": "203.0.113.10",
	}
	allow := []string{"own.test:" + port, "six.test:" + port, "teredo.test:" + port, "public.test:" + port}
	own := ownSet{addrs: map[netip.Addr]bool{netip.MustParseAddr("203.0.113.9"): true}}
	tp := startProxy(t, allow, hosts, &Proxy{Own: own})
	want := map[string]string{
		"own.test":    "resolves to the host's own address 203.0.113.9",
		"six.test":    "resolves to 6to4 address 2002:cb00:7109::1 (it embeds the host's own address 203.0.113.9)",
		"teredo.test": "resolves to Teredo address 2001:0:808:808::34ff:8ef6 (it embeds the host's own address 203.0.113.9)",
	}
	var wantDenied []Denial
	for _, name := range []string{"own.test", "six.test", "teredo.test"} {
		resp, c := connectVia(t, tp.addr, name+":"+port)
		if c != nil {
			c.Close()
			t.Fatalf("CONNECT %s succeeded", name)
		}
		if text := body(t, resp); resp.StatusCode != 403 || !strings.Contains(text, want[name]) {
			t.Errorf("CONNECT %s: %d %q, want 403 and %q", name, resp.StatusCode, text, want[name])
		}
		wantDenied = append(wantDenied, Denial{name, p16, want[name], DenyAddress})
	}
	// Forwarded (absolute-form) request.
	resp := proxyGet(t, tp.addr, "http://own.test:"+port+"/")
	if text := body(t, resp); resp.StatusCode != 403 || !strings.Contains(text, want["own.test"]) {
		t.Errorf("GET via the proxy: %d %q", resp.StatusCode, text)
	}
	wantDenied = append(wantDenied, Denial{"own.test", p16, want["own.test"], DenyAddress})
	// Transparent forwarder.
	fwd := forwardVia(t, tp.Proxy, "own.test", p16)
	wantDenied = append(wantDenied, Denial{"own.test", p16, want["own.test"], DenyAddress})
	if !fwd {
		t.Error("the transparent forwarder kept the connection open")
	}
	if got := tp.denials(); !slices.Equal(got, wantDenied) {
		t.Errorf("reported\n %v\nwant\n %v", got, wantDenied)
	}
	if d := tp.dialer.addrs(); len(d) != 0 {
		t.Errorf("dialed %q for refused destinations", d)
	}

	// The control: a public address that is not the host's passes the
	// guard (what would be dialed; the test dials loopback only).
	ctx := context.Background()
	if got, err := tp.addrs(ctx, "public.test", p16); err != nil || !slices.Equal(got, []netip.Addr{netip.MustParseAddr("203.0.113.10")}) {
		t.Errorf("public.test: %v, %v; want its address", got, err)
	}
	// An IP rule for the own address lifts the guard for it (the user's
	// explicit choice), at its port only.
	al, err := ParseAllowlist(append(allow, "203.0.113.9:"+port))
	if err != nil {
		t.Fatal(err)
	}
	px := &Proxy{Allow: al, Resolver: newResolver(hosts), Own: own}
	if got, err := px.addrs(ctx, "own.test", p16); err != nil || !slices.Equal(got, []netip.Addr{netip.MustParseAddr("203.0.113.9")}) {
		t.Errorf("own.test with an IP rule: %v, %v; want its address", got, err)
	}
	if _, err := px.addrs(ctx, "own.test", p16+1); err == nil {
		t.Error("own.test with an IP rule for another port passed")
	}

	// The host's addresses cannot be read: refused (fail closed).
	tp3 := startProxy(t, allow, hosts, &Proxy{Own: ownSet{err: errors.New("netlink broken")}})
	resp, c := connectVia(t, tp3.addr, "public.test:"+port)
	if c != nil {
		c.Close()
		t.Fatal("CONNECT succeeded without the host's addresses")
	}
	if text := body(t, resp); resp.StatusCode != 502 || !strings.Contains(text, "netlink broken") {
		t.Errorf("unreadable host addresses: %d %q", resp.StatusCode, text)
	}
	if d := tp3.dialer.addrs(); len(d) != 0 {
		t.Errorf("dialed %q without the host's addresses", d)
	}
}

// proxyGet sends GET url through the proxy at proxyAddr (absolute form).
func proxyGet(t *testing.T, proxyAddr, url string) *http.Response {
	t.Helper()
	cl := proxyClient(proxyAddr)
	defer cl.CloseIdleConnections()
	resp, err := cl.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// forwardVia connects to a transparent forwarder of p for host:port and
// reports whether the proxy closed the connection (without a byte).
func forwardVia(t *testing.T, p *Proxy, host string, port uint16) bool {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.ServeForward(ln, host, port) }()
	t.Cleanup(func() { ln.Close(); <-done })
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	n, err := c.Read(make([]byte, 1))
	return n == 0 && err == io.EOF
}
