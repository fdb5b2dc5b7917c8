package egress

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// mapResolver is an /etc/hosts-style resolver: tests never use real DNS.
type mapResolver struct {
	mu    sync.Mutex
	m     map[string][]netip.Addr
	calls []string
}

func newResolver(m map[string]string) *mapResolver {
	r := &mapResolver{m: map[string][]netip.Addr{}}
	for name, list := range m {
		for _, a := range strings.Split(list, ",") {
			r.m[name] = append(r.m[name], netip.MustParseAddr(a))
		}
	}
	return r
}

func (r *mapResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, host)
	if a, ok := r.m[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (r *mapResolver) lookups() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// loopDialer dials loopback addresses only, and records every address it
// was asked for: a test can never reach beyond the machine through it.
type loopDialer struct {
	mu     sync.Mutex
	dialed []string
	d      net.Dialer
}

func (d *loopDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	d.mu.Lock()
	d.dialed = append(d.dialed, address)
	d.mu.Unlock()
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !ap.Addr().IsLoopback() {
		return nil, fmt.Errorf("test dialer: refusing %s (not a loopback IP:PORT)", address)
	}
	return d.d.DialContext(ctx, network, address)
}

func (d *loopDialer) addrs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.dialed...)
}

// testProxy is a Proxy serving on a loopback listener, with its test
// resolver, dialer and the denials it reported.
type testProxy struct {
	*Proxy
	addr   string
	res    *mapResolver
	dialer *loopDialer
	mu     sync.Mutex
	denied []Denial
	served chan error
}

func (tp *testProxy) denials() []Denial {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return append([]Denial(nil), tp.denied...)
}

// startProxy serves p (Allow parsed from allow, resolver from hosts) on
// 127.0.0.1 until the test ends.
func startProxy(t testing.TB, allow []string, hosts map[string]string, p *Proxy) *testProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveProxy(t, ln, allow, hosts, p)
}

func serveProxy(t testing.TB, ln net.Listener, allow []string, hosts map[string]string, p *Proxy) *testProxy {
	t.Helper()
	if p == nil {
		p = &Proxy{}
	}
	al, err := ParseAllowlist(allow)
	if err != nil {
		t.Fatal(err)
	}
	tp := &testProxy{Proxy: p, addr: ln.Addr().String(), res: newResolver(hosts), dialer: &loopDialer{}, served: make(chan error, 1)}
	p.Allow = al
	p.Resolver = tp.res
	p.Dialer = tp.dialer
	p.Report = func(d Denial) {
		tp.mu.Lock()
		tp.denied = append(tp.denied, d)
		tp.mu.Unlock()
	}
	go func() { tp.served <- p.Serve(ln) }()
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("close proxy: %v", err)
		}
		if err := <-tp.served; !errors.Is(err, ErrClosed) {
			t.Errorf("Serve returned %v, want ErrClosed", err)
		}
		for _, a := range tp.dialer.addrs() {
			if ap, err := netip.ParseAddrPort(a); err != nil || !ap.Addr().IsLoopback() {
				t.Errorf("the proxy tried to dial %s", a)
			}
		}
	})
	return tp
}

// connectVia sends CONNECT target through the proxy at proxyAddr and
// returns the response and, on 200, the tunnel.
func connectVia(t testing.TB, proxyAddr, target string) (*http.Response, net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	return connectOn(t, c, target)
}

func connectOn(t testing.TB, c net.Conn, target string) (*http.Response, net.Conn) {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(strings.NewReader(string(body)))
		c.Close()
		return resp, nil
	}
	c.SetDeadline(time.Time{})
	return resp, &bufConn{Conn: c, r: br}
}

// bufConn reads through the bufio.Reader that read the proxy's response.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(b []byte) (int, error) { return c.r.Read(b) }

func (c *bufConn) CloseWrite() error { return c.Conn.(*net.TCPConn).CloseWrite() }

func body(t testing.TB, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// echoServer echoes every connection on 127.0.0.1 until the test ends.
func echoServer(t testing.TB) netip.AddrPort {
	t.Helper()
	return serveConns(t, func(c net.Conn) {
		io.Copy(c, c)
	})
}

// serveConns runs fn for each connection on a 127.0.0.1 listener, then
// closes the connection; all are closed when the test ends.
func serveConns(t testing.TB, fn func(net.Conn)) netip.AddrPort {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns = map[net.Conn]struct{}{}
		wg    sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = struct{}{}
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				fn(c)
				c.Close()
				mu.Lock()
				delete(conns, c)
				mu.Unlock()
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().(*net.TCPAddr).AddrPort()
}

// testCA is a certificate authority and a server certificate for
// allowed.test and *.allowed.test, made for one test.
type testCA struct {
	pemFile string // the CA certificate, for curl, Python, Node
	pool    *x509.CertPool
	server  tls.Certificate
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "sbx egress test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "allowed.test"},
		DNSNames:     []string{"allowed.test", "*.allowed.test"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return &testCA{
		pemFile: file,
		pool:    pool,
		server:  tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
	}
}

// eventually polls cond until it holds or 10 s pass.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
