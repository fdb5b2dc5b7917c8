package egress

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

func portOf(t testing.TB, addr string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// echoOnce writes msg through c and expects it back.
func echoOnce(t testing.TB, c net.Conn, msg string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("read echo: %v", err)
	}
	if string(got) != msg {
		t.Fatalf("echo = %q, want %q", got, msg)
	}
}

func TestConnectAllowed(t *testing.T) {
	echo := echoServer(t)
	port := strconv.Itoa(int(echo.Port()))
	tp := startProxy(t,
		[]string{"allowed.test:" + port, "127.0.0.1:" + port},
		map[string]string{"allowed.test": "127.0.0.1"}, nil)

	for _, target := range []string{"allowed.test:" + port, "ALLOWED.Test.:" + port, "127.0.0.1:" + port} {
		resp, c := connectVia(t, tp.addr, target)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("CONNECT %s: %s %s", target, resp.Status, body(t, resp))
		}
		echoOnce(t, c, "hello through "+target)
		c.Close()
	}
	// The name was resolved by the proxy, and the proxy dialed the address
	// it checked, never the name.
	if got, want := tp.res.lookups(), []string{"allowed.test", "allowed.test"}; !reflect.DeepEqual(got, want) {
		t.Errorf("lookups = %q, want %q", got, want)
	}
	for _, a := range tp.dialer.addrs() {
		if a != echo.String() {
			t.Errorf("dialed %q, want only %s", a, echo)
		}
	}
	if d := tp.denials(); len(d) != 0 {
		t.Errorf("denials: %v", d)
	}
}

func TestConnectEarlyData(t *testing.T) {
	// A client may send its first bytes (a TLS ClientHello) right behind
	// the CONNECT request, in the same segment.
	echo := echoServer(t)
	tp := startProxy(t, []string{echo.String()}, nil, nil)
	c, err := net.Dial("tcp", tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\nearly bytes", echo, echo)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	got := make([]byte, len("early bytes"))
	if _, err := io.ReadFull(br, got); err != nil || string(got) != "early bytes" {
		t.Fatalf("early data: %q %v", got, err)
	}
}

func TestConnectHalfClose(t *testing.T) {
	// The echo server answers until our EOF, then closes: the tunnel must
	// carry the half-close and the rest of the answer.
	echo := echoServer(t)
	tp := startProxy(t, []string{echo.String()}, nil, nil)
	resp, c := connectVia(t, tp.addr, echo.String())
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	defer c.Close()
	msg := strings.Repeat("half-close ", 20000)
	go func() {
		io.WriteString(c, msg)
		c.(*bufConn).CloseWrite()
	}()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil || string(got) != msg {
		t.Fatalf("read %d bytes (%v), want %d then EOF", len(got), err, len(msg))
	}
}

func TestConnectDenied(t *testing.T) {
	echo := echoServer(t)
	port := strconv.Itoa(int(echo.Port()))
	p16 := uint16(echo.Port())
	allow := []string{
		"allowed.test:" + port,
		"*.wild.test:" + port,
		"loop.test:" + port,
		"meta.test:" + port,
		"mixed.test:" + port,
		"mapped.test:" + port,
		"six.test:" + port,
		"private.test:" + port,
		"cgnat.test:" + port,
		"unresolvable.test:" + port,
	}
	hosts := map[string]string{
		"allowed.test":  "127.0.0.1",
		"evil.test":     "127.0.0.1",
		"wild.test":     "127.0.0.1",
		"loop.test":     "127.0.0.1",
		"meta.test":     "169.254.169.254",
		"mixed.test":    "203.0.113.7,127.0.0.1",
		"mapped.test":   "::ffff:127.0.0.1",
		"six.test":      "fe80::1",
		"private.test":  "10.0.0.5",
		"cgnat.test":    "100.64.1.1",
		"a.wild.test":   "127.0.0.1",
		"127.0.0.1":     "127.0.0.1",
		"localhost":     "127.0.0.1",
		"allowed.test.": "127.0.0.1",
	}
	cases := []struct {
		target string
		status int
		denial *Denial // nil: refused but not reported
		lookup bool    // the resolver is asked
	}{
		{"evil.test:" + port, 403, &Denial{"evil.test", p16, "not allowed", DenyNotAllowed}, false},
		{"allowed.test:1", 403, &Denial{"allowed.test", 1, "not allowed", DenyNotAllowed}, false},
		{"127.0.0.1:" + port, 403, &Denial{"127.0.0.1", p16, "not allowed", DenyNotAllowed}, false},
		{"[::1]:" + port, 403, &Denial{"::1", p16, "not allowed", DenyNotAllowed}, false},
		{"[::ffff:127.0.0.1]:" + port, 403, &Denial{"127.0.0.1", p16, "not allowed", DenyNotAllowed}, false},
		{"localhost:" + port, 403, &Denial{"localhost", p16, "not allowed", DenyNotAllowed}, false},
		{"wild.test:" + port, 403, &Denial{"wild.test", p16, "not allowed", DenyNotAllowed}, false}, // apex of *.wild.test
		{"127.1:" + port, 400, &Denial{"127.1", p16, "invalid host", DenyOther}, false},
		{"2130706433:" + port, 400, &Denial{"2130706433", p16, "invalid host", DenyOther}, false},
		{"allowed.test:0", 400, &Denial{"allowed.test", 0, "invalid port", DenyOther}, false},
		{"allowed.test:99999", 400, &Denial{"allowed.test", 0, "invalid port", DenyOther}, false},
		{"allowed.test", 400, &Denial{"allowed.test", 0, "invalid target (want host:port)", DenyOther}, false},
		// DNS-rebinding guard: allowed names whose addresses are not public.
		{"loop.test:" + port, 403, &Denial{"loop.test", p16, "resolves to loopback address 127.0.0.1", DenyAddress}, true},
		{"meta.test:" + port, 403, &Denial{"meta.test", p16, "resolves to link-local address 169.254.169.254", DenyAddress}, true},
		{"mixed.test:" + port, 403, &Denial{"mixed.test", p16, "resolves to loopback address 127.0.0.1", DenyAddress}, true},
		{"mapped.test:" + port, 403, &Denial{"mapped.test", p16, "resolves to loopback address 127.0.0.1", DenyAddress}, true},
		{"six.test:" + port, 403, &Denial{"six.test", p16, "resolves to link-local address fe80::1", DenyAddress}, true},
		{"private.test:" + port, 403, &Denial{"private.test", p16, "resolves to private address 10.0.0.5", DenyAddress}, true},
		{"cgnat.test:" + port, 403, &Denial{"cgnat.test", p16, "resolves to carrier-grade NAT address 100.64.1.1", DenyAddress}, true},
		{"unresolvable.test:" + port, 502, nil, true},
	}
	for _, c := range cases {
		t.Run(c.target, func(t *testing.T) {
			tp := startProxy(t, allow, hosts, nil)
			resp, conn := connectVia(t, tp.addr, c.target)
			if conn != nil {
				conn.Close()
				t.Fatalf("CONNECT %s succeeded", c.target)
			}
			text := body(t, resp)
			if resp.StatusCode != c.status {
				t.Errorf("status %d (%s), want %d", resp.StatusCode, text, c.status)
			}
			var want []Denial
			if c.denial != nil {
				want = []Denial{*c.denial}
				if !strings.Contains(text, c.denial.Reason) {
					t.Errorf("body %q does not give the reason %q", text, c.denial.Reason)
				}
			}
			if got := tp.denials(); !reflect.DeepEqual(got, want) {
				t.Errorf("reported %v, want %v", got, want)
			}
			if got := len(tp.res.lookups()) > 0; got != c.lookup {
				t.Errorf("resolver asked: %v, want %v (lookups %q)", got, c.lookup, tp.res.lookups())
			}
			if d := tp.dialer.addrs(); len(d) != 0 {
				t.Errorf("dialed %q for a refused destination", d)
			}
		})
	}

	// The same proxy lets the allowed ones through, so the refusals above
	// are the checks' doing: a name whose address is allowed literally, and
	// a wildcard's subdomain.
	tp := startProxy(t, append(allow, "127.0.0.1:"+port), hosts, nil)
	for _, target := range []string{"loop.test:" + port, "a.wild.test:" + port, "127.0.0.1:" + port, "mapped.test:" + port} {
		resp, c := connectVia(t, tp.addr, target)
		if resp.StatusCode != 200 {
			t.Fatalf("CONNECT %s with 127.0.0.1:%s allowed: %s", target, port, resp.Status)
		}
		echoOnce(t, c, "ok")
		c.Close()
	}
}

func TestRebindingGuardNeedsSamePort(t *testing.T) {
	// An IP rule lifts the guard for its own port only.
	echo := echoServer(t)
	port := strconv.Itoa(int(echo.Port()))
	tp := startProxy(t, []string{"loop.test:" + port, "127.0.0.1:1"}, map[string]string{"loop.test": "127.0.0.1"}, nil)
	resp, _ := connectVia(t, tp.addr, "loop.test:"+port)
	if resp.StatusCode != 403 {
		t.Fatalf("status %s, want 403", resp.Status)
	}
}

func TestUpstreamDown(t *testing.T) {
	// Allowed, but nothing listens: 502, and it is not a denial.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	tp := startProxy(t, []string{addr}, nil, nil)
	resp, _ := connectVia(t, tp.addr, addr)
	if text := body(t, resp); resp.StatusCode != 502 || !strings.Contains(text, "connection refused") {
		t.Errorf("status %d %q, want 502 connection refused", resp.StatusCode, text)
	}
	if d := tp.denials(); len(d) != 0 {
		t.Errorf("reported %v", d)
	}
}

// upstreamHTTP is a plain HTTP server that describes each request.
func upstreamHTTP(t *testing.T) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var hdr []string
		for k := range r.Header {
			hdr = append(hdr, k)
		}
		fmt.Fprintf(w, "%s %s host=%s body=%q headers=%s", r.Method, r.URL.RequestURI(), r.Host, b, strings.Join(hdr, ","))
	}))
	t.Cleanup(s.Close)
	return s
}

func proxyClient(proxyAddr string) *http.Client {
	u := &url.URL{Scheme: "http", Host: proxyAddr}
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(u)}, Timeout: 10 * time.Second}
}

func TestForwardHTTP(t *testing.T) {
	up := upstreamHTTP(t)
	port := portOf(t, up.Listener.Addr().String())
	port2 := portOf(t, upstreamHTTP(t).Listener.Addr().String()) // not allowed literally
	tp := startProxy(t,
		[]string{"allowed.test:" + port, "127.0.0.1:" + port, "loop.test:" + port2},
		map[string]string{"allowed.test": "127.0.0.1", "loop.test": "127.0.0.1"}, nil)
	cl := proxyClient(tp.addr)
	defer cl.CloseIdleConnections()

	resp, err := cl.Get("http://allowed.test:" + port + "/path?q=1")
	if err != nil {
		t.Fatal(err)
	}
	text := body(t, resp)
	if resp.StatusCode != 200 || !strings.HasPrefix(text, "GET /path?q=1 host=allowed.test:"+port+" ") {
		t.Fatalf("GET: %s %q", resp.Status, text)
	}
	for _, h := range []string{"Proxy-Connection", "Proxy-Authorization", "X-Forwarded-For", "Forwarded", "Via"} {
		if strings.Contains(text, h) {
			t.Errorf("upstream got header %s: %q", h, text)
		}
	}
	resp, err = cl.Post("http://allowed.test:"+port+"/up", "text/plain", strings.NewReader("payload"))
	if err != nil {
		t.Fatal(err)
	}
	if text := body(t, resp); !strings.HasPrefix(text, `POST /up host=allowed.test:`+port+` body="payload"`) {
		t.Fatalf("POST: %q", text)
	}

	// Refusals, each a 403 and a report.
	refused := []struct {
		url string
		d   Denial
	}{
		{"http://evil.test/", Denial{"evil.test", 80, "not allowed", DenyNotAllowed}},
		{"http://allowed.test/", Denial{"allowed.test", 80, "not allowed", DenyNotAllowed}},
		{"http://127.0.0.2:" + port + "/", Denial{"127.0.0.2", uint16(mustAtoi(port)), "not allowed", DenyNotAllowed}},
		{"http://loop.test:" + port2 + "/", Denial{"loop.test", uint16(mustAtoi(port2)), "resolves to loopback address 127.0.0.1", DenyAddress}},
	}
	for i, c := range refused {
		resp, err := cl.Get(c.url)
		if err != nil {
			t.Fatal(err)
		}
		text := body(t, resp)
		if resp.StatusCode != 403 || !strings.Contains(text, c.d.Reason) {
			t.Errorf("GET %s: %s %q, want 403 %s", c.url, resp.Status, text, c.d.Reason)
		}
		if got := tp.denials(); len(got) != i+1 || got[i] != c.d {
			t.Errorf("GET %s: reported %v, want %v last", c.url, got, c.d)
		}
	}
	for _, a := range tp.dialer.addrs() {
		if a != "127.0.0.1:"+port {
			t.Errorf("dialed %s", a)
		}
	}
}

func mustAtoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(err)
	}
	return n
}

func TestForwardStreams(t *testing.T) {
	// A streamed response (server-sent events) reaches the client event by
	// event, not at the end.
	next := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < 3; i++ {
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
			select {
			case <-next:
			case <-r.Context().Done():
				return
			}
		}
	}))
	defer up.Close()
	tp := startProxy(t, []string{up.Listener.Addr().String()}, nil, nil)
	cl := proxyClient(tp.addr)
	defer cl.CloseIdleConnections()
	resp, err := cl.Get(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for i := 0; i < 3; i++ {
		line, err := br.ReadString('\n')
		if err != nil || line != fmt.Sprintf("data: %d\n", i) {
			t.Fatalf("event %d: %q %v", i, line, err)
		}
		br.ReadString('\n')
		next <- struct{}{}
	}
}

func TestNotProxyRequests(t *testing.T) {
	tp := startProxy(t, []string{"allowed.test:80"}, map[string]string{"allowed.test": "127.0.0.1"}, nil)
	cases := []struct {
		req    string
		status int
	}{
		{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 400},
		{"GET https://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 501},
		{"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", 501},
		{"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", 400},
		{"CONNECT /path HTTP/1.1\r\nHost: x:443\r\n\r\n", 400},
		{"GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\nX-Big: " + strings.Repeat("a", 64<<10) + "\r\n\r\n", 431},
	}
	for _, c := range cases {
		conn, err := net.Dial("tcp", tp.addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(conn, c.req)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		conn.Close()
		if err != nil {
			t.Fatalf("%.40q: %v", c.req, err)
		}
		if resp.StatusCode != c.status {
			t.Errorf("%.40q: status %d, want %d", c.req, resp.StatusCode, c.status)
		}
	}
	if len(tp.dialer.addrs()) != 0 || len(tp.denials()) != 0 {
		t.Errorf("dialed %v, reported %v", tp.dialer.addrs(), tp.denials())
	}
}

func TestHeaderTimeout(t *testing.T) {
	// A client that never finishes its headers is cut off.
	tp := startProxy(t, nil, nil, &Proxy{HeaderTimeout: 200 * time.Millisecond})
	c, err := net.Dial("tcp", tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "CONNECT allowed.test:443 HTTP/1.1\r\n")
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = io.ReadAll(c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the proxy kept a connection with unfinished headers open")
	}
}

func TestInvalidSettings(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{MaxTunnels: -1}
	if err := p.Serve(ln); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Fatalf("Serve with MaxTunnels -1: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestDenialString(t *testing.T) {
	d := Denial{Host: "evil.example", Port: 443, Reason: "not allowed"}
	if got := d.String(); got != "connect evil.example:443 (not allowed)" {
		t.Errorf("String() = %q", got)
	}
	if got := (Denial{Host: "::1", Port: 80}).Target(); got != "[::1]:80" {
		t.Errorf("Target() = %q", got)
	}
}

func TestForwardIdle(t *testing.T) {
	const idle = 300 * time.Millisecond
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/plain")
		switch r.URL.Path {
		case "/stall": // headers and a byte, then silence
			w.Write([]byte("."))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case "/steady": // a byte every 50 ms for 4 idle periods
			for i := 0; i < 24; i++ {
				w.Write([]byte("."))
				w.(http.Flusher).Flush()
				time.Sleep(50 * time.Millisecond)
			}
		}
	}))
	defer up.Close()
	tp := startProxy(t, []string{up.Listener.Addr().String()}, nil, &Proxy{IdleTimeout: idle})
	cl := proxyClient(tp.addr)
	defer cl.CloseIdleConnections()

	t.Run("stalled upstream", func(t *testing.T) {
		resp, err := cl.Get(up.URL + "/stall")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil {
			t.Fatalf("read %q to a clean end, want the stalled exchange cut", b)
		}
	})
	t.Run("steady upstream, after a request body", func(t *testing.T) {
		// The response streams for longer than IdleTimeout after the
		// request body ended: only silence may end it.
		resp, err := cl.Post(up.URL+"/steady", "text/plain", strings.NewReader("request body"))
		if err != nil {
			t.Fatal(err)
		}
		if b := body(t, resp); b != strings.Repeat(".", 24) {
			t.Fatalf("got %q", b)
		}
	})
	t.Run("stalled client body", func(t *testing.T) {
		c, err := net.Dial("tcp", tp.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST %s/steady HTTP/1.1\r\nHost: %s\r\nContent-Length: 100\r\n\r\nonly this", up.URL, up.Listener.Addr())
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		b, err := io.ReadAll(c)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("the proxy waits for a stalled request body forever (read %q)", b)
		}
		if !strings.HasPrefix(string(b), "HTTP/1.1 408 ") || !strings.Contains(string(b), "request body stalled") {
			t.Errorf("got %q, want 408", b)
		}
	})
	eventually(t, "forward slots to free", func() bool { return len(tp.slots) == 0 })
}
