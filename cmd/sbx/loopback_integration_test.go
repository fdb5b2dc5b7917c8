package main

// --net loopback (the default): the sandbox's own, otherwise empty network
// namespace for test servers, and nothing beyond it. Only addresses on
// this machine (127.0.0.0/8, ::1, and the host's own address for an IP
// literal beyond loopback) and never-routed documentation addresses
// (192.0.2.1, 2001:db8::1) are used.

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// loopbackServer starts python3's http.server on HOST inside the sandbox,
// waits for it and fetches a file from it with curl.
func loopbackServer(bind, url string) string {
	return "echo served > page.txt; " + python + " -m http.server -b " + bind + " 18080 >/dev/null 2>&1 & " +
		"for i in $(seq 50); do curl -sS --max-time 2 " + url + "/page.txt 2>/dev/null && break; sleep 0.1; done; kill $!"
}

// TestNetLoopback: by default a program can serve and reach itself over
// IPv4 and IPv6 loopback (a real http.server and curl), while a connect or
// a UDP send beyond loopback is refused with EPERM by the wall and
// reported (rootless: ENETUNREACH from the empty namespace, unreported);
// --net none refuses the same server (the control).
func TestNetLoopback(t *testing.T) {
	b := newBox(t)
	for _, tc := range []struct{ name, bind, url string }{
		{"ipv4", "127.0.0.1", "http://127.0.0.1:18080"},
		{"ipv6", "::1", "http://[::1]:18080"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := b.in(t)
			r := b.run("--write", "--", "sh", "-c", loopbackServer(tc.bind, tc.url))
			skipForeignWall(t, r)
			if r.code != 0 || r.stdout != "served\n" {
				t.Fatalf("want the sandbox's own server to answer %q\n%v", "served", r)
			}
			if strings.Contains(r.stderr, "denied connect 127.") || strings.Contains(r.stderr, "denied connect [::1]") ||
				strings.Contains(r.stderr, "denied bind") || strings.Contains(r.stderr, "denied socket") {
				t.Errorf("loopback use reported as a denial\n%v", r)
			}
			c := b.run("--write", "--net", "none", "--", "sh", "-c", loopbackServer(tc.bind, tc.url))
			if c.stdout != "" {
				t.Errorf("control: --net none must refuse the server\n%v", c)
			}
		})
	}

	t.Run("beyond", func(t *testing.T) {
		b := b.in(t)
		script := `
import errno, socket
def try_(what, f):
    try:
        f()
        print(what, "OK")
    except OSError as e:
        print(what, errno.errorcode[e.errno])
try_("tcp4", lambda: socket.create_connection(("192.0.2.1", 80), timeout=5))
try_("tcp6", lambda: socket.create_connection(("2001:db8::1", 80), timeout=5))
try_("udp4", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("192.0.2.1", 53)))
try_("udp6", lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).sendto(b"x", ("2001:db8::1", 53)))
`
		r := b.run("--", python, "-c", script)
		skipForeignWall(t, r)
		want := "EPERM"
		if !bpfReports() {
			want = "ENETUNREACH" // no wall: the empty namespace has no route
		}
		if r.code != 0 || r.stdout != "tcp4 "+want+"\ntcp6 "+want+"\nudp4 "+want+"\nudp6 "+want+"\n" {
			t.Fatalf("want every way beyond loopback refused with %s\n%v", want, r)
		}
		if !bpfReports() {
			return
		}
		for _, d := range []string{"sbx: denied connect 192.0.2.1:80 (", "sbx: denied connect [2001:db8::1]:80 (",
			"sbx: denied sendmsg 192.0.2.1:53 (", "sbx: denied sendmsg [2001:db8::1]:53 ("} {
			if !strings.Contains(r.stderr, d) {
				t.Errorf("stderr lacks %q\n%v", d, r)
			}
		}
	})

	t.Run("netlink route", func(t *testing.T) {
		// What npm and getaddrinfo ask first: the namespace's addresses
		// (lo alone). Other netlink protocols stay refused.
		b := b.in(t)
		r := b.run("--", "sh", "-c", "ip -o addr show | awk '{print $2, $4}'; "+python+` -c "
import socket
try:
    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_AUDIT if hasattr(socket, 'NETLINK_AUDIT') else 9)
    print('audit OK')
except OSError as e:
    print('audit', e.errno)
"`)
		skipForeignWall(t, r)
		if r.code != 0 || r.stdout != "lo 127.0.0.1/8\nlo ::1/128\naudit 1\n" {
			t.Errorf("want lo's two addresses and NETLINK_AUDIT refused (EPERM)\n%v", r)
		}
	})
}

// serveTest is a Go test that starts an httptest server (127.0.0.1, or
// ::1 when that fails) and fetches a page from it: what a Go project's
// test suite does.
const serveTest = `package serve

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestServe(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "served")
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || string(body) != "served" {
		t.Fatalf("body %q, %v", body, err)
	}
}
`

// TestNetLoopbackGoTest: a Go test binary compiled on the host, whose test
// starts an httptest server, passes inside the sandbox by default as it
// does on the host; with --net none it cannot listen and fails (the
// control).
func TestNetLoopbackGoTest(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool in PATH")
	}
	b := newBox(t)
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "go.mod"), "module serve\n\ngo 1.22\n", 0o644)
	writeFile(t, filepath.Join(src, "serve_test.go"), serveTest, 0o644)
	bin := filepath.Join(b.ws, "serve.test")
	build := exec.Command(goTool, "test", "-c", "-o", bin, ".")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go test -c: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "-test.run", "TestServe", "-test.v").CombinedOutput(); err != nil {
		t.Fatalf("outside the sandbox the test fails: %v\n%s", err, out)
	}

	r := b.run("--", "./serve.test", "-test.run", "TestServe", "-test.v")
	skipForeignWall(t, r)
	if r.code != 0 || !strings.Contains(r.stdout, "--- PASS: TestServe") {
		t.Fatalf("want the httptest test to pass inside\n%v", r)
	}
	if strings.Contains(r.stderr, "sbx: denied") {
		t.Errorf("the test's loopback use was reported\n%v", r)
	}
	c := b.run("--net", "none", "--", "./serve.test", "-test.run", "TestServe", "-test.v")
	if c.code == 0 || strings.Contains(c.stdout, "--- PASS: TestServe") {
		t.Errorf("control: with --net none the test must fail\n%v", c)
	}
}

// skipForeignWall skips t when sbx refused the run because another sbx
// build's network wall is attached to the sbx cgroup (a run of that build,
// e.g. another checkout's tests, is alive): its programs refuse every
// socket of this build's runs, which sbx detects and names (exit 125).
func skipForeignWall(t *testing.T, r result) {
	t.Helper()
	if r.code == exitSbxError && strings.Contains(r.stderr, "another sbx version's network wall is attached") {
		t.Skipf("another sbx build's network wall is attached meanwhile:\n%s", r.stderr)
	}
}

// TestEgressHostLoopback: --allow-host 127.0.0.1:PORT (a model server on
// the host's loopback, such as Ollama) works for clients that honour the
// proxy variables: NO_PROXY no longer names 127.0.0.1, which would send
// them to the sandbox's own loopback, where the host's server is not.
// Another port of the host's loopback stays refused by the proxy, and
// localhost and ::1 stay direct (the sandbox's own).
func TestEgressHostLoopback(t *testing.T) {
	up := newUpstream(t)
	e := newEgressBox(t)
	other := newUpstream(t)
	script := "echo $NO_PROXY; curl -sS --max-time 10 http://127.0.0.1:" + up.port + "/model; echo; " +
		"curl -s -o /dev/null -w '%{http_code}\\n' --max-time 10 http://127.0.0.1:" + other.port + "/"
	r := e.run("--allow-host", "127.0.0.1:"+up.port, "--", "sh", "-c", script)
	skipForeignWall(t, r)
	want := "localhost,::1\nupstream /model\n403\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("want %q\n%v", want, r)
	}
	if up.hits.Load() != 1 || other.hits.Load() != 0 {
		t.Errorf("upstream hits %d (want 1), other port %d (want 0)", up.hits.Load(), other.hits.Load())
	}
	if !strings.Contains(r.stderr, "sbx: denied connect 127.0.0.1:"+other.port+" (not allowed)") {
		t.Errorf("the other port's refusal is not reported\n%v", r)
	}
}

// TestNetLoopbackDNS: a name lookup in the sandbox fails at once instead
// of waiting on a resolver it cannot reach: /etc/resolv.conf names
// 127.0.0.1, where sbx answers NXDOMAIN (libc: EAI_NONAME, "Name or
// service not known", which clients do not retry) and reports the name
// with the --allow-host hint; rootless too (sbx's namespace helper opens
// the answerer's socket).
func TestNetLoopbackDNS(t *testing.T) {
	b := newBox(t)
	script := `
import socket, time
t = time.time()
try:
    socket.getaddrinfo("example.com", 443)
    print("resolved")
except socket.gaierror as e:
    print(e.errno, "fast" if time.time() - t < 2 else "slow")
`
	r := b.run("--", "sh", "-c", "curl --version >/dev/null; getent hosts sbx | cut -d' ' -f1; getent hosts example.com; echo getent $?; "+python+" -c '"+script+"'")
	skipForeignWall(t, r)
	// The sandbox's own hostname (which curl --version looks up) is its
	// loopback, quietly; example.com is NXDOMAIN (EAI_NONAME), reported.
	want := "127.0.0.1\ngetent 2\n-2 fast\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("want %q\n%v", want, r)
	}
	if strings.Contains(r.stderr, "denied resolve sbx") {
		t.Errorf("the sandbox's hostname reported as a denial\n%v", r)
	}
	for _, line := range []string{
		"sbx: denied resolve example.com (no DNS in the sandbox)\n",
		"sbx: the sandbox has no DNS; to let the program reach example.com, run sbx with --allow-host example.com[:PORT]",
	} {
		if strings.Count(r.stderr, line) != 1 {
			t.Errorf("stderr: want %q once\n%v", line, r)
		}
	}
}

// TestEgressTransparent: clients that ignore the proxy variables reach an
// allowed name all the same: sbx's DNS in the sandbox answers it with a
// loopback address of the sandbox where sbx listens on the allowed port
// and forwards, after the proxy's checks, to the real destination (here an
// upstream on the host's loopback, named by the test's hosts file). A name
// that is not allowed gets NXDOMAIN and is reported; the upstream counts
// exactly the allowed requests.
func TestEgressTransparent(t *testing.T) {
	up := newUpstream(t)
	e := newEgressBox(t, "127.0.0.1 api.test evil.test")
	p := up.port
	script := "curl -sS --noproxy '*' --max-time 10 http://api.test:" + p + "/curl; echo; " +
		"node -e 'fetch(\"http://api.test:" + p + "/node\").then(r => r.text()).then(t => console.log(t), e => console.log(\"error\", e.cause && e.cause.code))'; " +
		"curl -sS --noproxy '*' --max-time 10 http://evil.test:" + p + "/ 2>&1 | sed 's/ after .*//'; echo"
	r := e.run("--allow-host", "api.test:"+p, "--allow-host", "127.0.0.1:"+p, "--", "sh", "-c", script)
	skipForeignWall(t, r)
	want := "upstream /curl\nupstream /node\ncurl: (6) Could not resolve host: evil.test\n\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("want %q\n%v", want, r)
	}
	if up.hits.Load() != 2 {
		t.Errorf("upstream hits %d, want 2", up.hits.Load())
	}
	if !strings.Contains(r.stderr, "sbx: denied resolve evil.test (not allowed)\n") {
		t.Errorf("the refused name is not reported\n%v", r)
	}
}

// noProxyEnv runs a command with no proxy variable at all.
const noProxyEnv = "env -u HTTPS_PROXY -u HTTP_PROXY -u ALL_PROXY -u https_proxy -u http_proxy -u all_proxy "

// rawGet is a shell command: a raw TCP client (Python's socket) that sends
// GET path over HTTP/1.0 to host:port and prints the body.
func rawGet(host, port, path string) string {
	return python + ` -c "
import socket
s = socket.create_connection(('` + host + `', ` + port + `), timeout=10)
s.sendall(b'GET ` + path + ` HTTP/1.0\r\n\r\n')
print(s.makefile('rb').read().split(b'\r\n\r\n', 1)[1].decode())"`
}

// nodeFetch is a shell command: Node's fetch of url, printing the body or
// the error's code.
func nodeFetch(url string) string {
	return "node -e 'fetch(\"" + url + "\").then(r => r.text()).then(t => console.log(t), e => console.log(\"error\", e.cause && e.cause.code))'"
}

// TestEgressSameAddress: with no proxy variable at all, an allowed host
// loopback address is reached inside at the same address and port
// (127.0.0.1:P, [::1]:Q, localhost:P, which means the host's 127.0.0.1
// and ::1), by curl, Python's urllib, Node 20's fetch and a raw TCP
// client; a subdomain
// of a wildcard rule is answered by sbx's DNS and forwarded too; another
// port of the host's loopback is not reached. The upstreams answer on the
// host (the control), and count exactly the allowed requests.
func TestEgressSameAddress(t *testing.T) {
	up := newUpstream(t)
	up6 := newUpstream6(t)
	other := newUpstream(t)
	e := newEgressBox(t, "127.0.0.1 a.wild.test")
	if r := e.host(opts{}, "curl", "-sS", "http://[::1]:"+up6.port+"/control"); r.stdout != "upstream /control" {
		t.Fatalf("control: the IPv6 upstream must answer on the host\n%v", r)
	}
	p := up.port
	noProxy := noProxyEnv
	script := noProxy + "curl -sS --max-time 10 http://localhost:" + p + "/localhost; echo; " +
		noProxy + "curl -sS --max-time 10 http://[::1]:" + up6.port + "/v6; echo; " +
		noProxy + "curl -sS --max-time 10 http://a.wild.test:" + p + "/wild; echo; " +
		noProxy + python + ` -c "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:` + p + `/urllib').read().decode())"; echo; ` +
		noProxy + rawGet("127.0.0.1", p, "/raw") + "; " +
		noProxy + "curl -sS --max-time 10 http://127.0.0.1:" + other.port + "/ 2>&1 | sed 's/ after .*//'; " +
		noProxy + nodeFetch("http://127.0.0.1:"+p+"/node")
	r := e.run("--allow-host", "localhost:"+p, "--allow-host", "[::1]:"+up6.port, "--allow-host", "*.wild.test:"+p, "--", "sh", "-c", script)
	skipForeignWall(t, r)
	want := "upstream /localhost\nupstream /v6\nupstream /wild\nupstream /urllib\nupstream /raw\n" +
		"curl: (7) Failed to connect to 127.0.0.1 port " + other.port + "\n" + "upstream /node\n"
	const hits = 5
	if r.code != 0 || r.stdout != want {
		t.Fatalf("want %q\n%v", want, r)
	}
	if up.hits.Load() != hits || up6.hits.Load() != 2 || other.hits.Load() != 0 {
		t.Errorf("upstream hits %d (want %d), IPv6 %d (want 2: the control and the run), other port %d (want 0)", up.hits.Load(), hits, up6.hits.Load(), other.hits.Load())
	}
}

// newUpstream6 is newUpstream on the host's [::1].
func newUpstream6(t *testing.T) *upstream {
	t.Helper()
	return newUpstreamAt(t, "[::1]:0")
}

// newUpstreamAt is newUpstream listening on addr (skipped where the host
// cannot listen there).
func newUpstreamAt(t *testing.T, addr string) *upstream {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s on the host: %v", addr, err)
	}
	u := &upstream{}
	u.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.hits.Add(1)
		fmt.Fprintf(w, "upstream %s", r.URL.Path)
	}))
	u.Listener.Close()
	u.Listener = ln
	u.Start()
	t.Cleanup(u.Close)
	_, u.port, _ = net.SplitHostPort(ln.Addr().String())
	return u
}

// hostAddr4 is one of the host's global unicast IPv4 addresses (not
// loopback); the test is skipped on a host without one.
func hostAddr4(t *testing.T) netip.Addr {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() && p.Addr().IsGlobalUnicast() {
			return p.Addr()
		}
	}
	t.Skip("the host has no global unicast IPv4 address")
	return netip.Addr{}
}

// TestEgressLiteralBeyondLoopback: with no proxy variable at all, an
// allowed IP address beyond loopback (the host's own, here) is reached at
// the same address and port inside the sandbox, by curl, a raw TCP client
// and Node 20's fetch, root (the BPF wall lets the sandbox connect to
// exactly that endpoint) and rootless. Another port of the same address
// is not reached: as root the wall refuses it and reports it. The
// upstreams answer on the host (the control) and count exactly the allowed
// requests.
func TestEgressLiteralBeyondLoopback(t *testing.T) {
	a := hostAddr4(t)
	up := newUpstreamAt(t, netip.AddrPortFrom(a, 0).String())
	other := newUpstreamAt(t, netip.AddrPortFrom(a, 0).String())
	e := newEgressBox(t)
	ep, op := net.JoinHostPort(a.String(), up.port), net.JoinHostPort(a.String(), other.port)
	if r := e.host(opts{}, "curl", "-sS", "http://"+op+"/control"); r.stdout != "upstream /control" {
		t.Fatalf("control: the upstream must answer on the host\n%v", r)
	}
	noProxy := noProxyEnv
	script := noProxy + "curl -sS --max-time 10 http://" + ep + "/curl; echo; " +
		noProxy + rawGet(a.String(), up.port, "/raw") + "; " +
		noProxy + nodeFetch("http://"+ep+"/node") + "; " +
		noProxy + "curl -sS --max-time 10 http://" + op + "/ >/dev/null 2>&1; echo other $?"
	r := e.run("--allow-host", ep, "--", "sh", "-c", script)
	skipForeignWall(t, r)
	want := "upstream /curl\nupstream /raw\nupstream /node\nother 7\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("want %q\n%v", want, r)
	}
	if up.hits.Load() != 3 || other.hits.Load() != 1 {
		t.Errorf("upstream hits %d (want 3), other port %d (want 1: the control)", up.hits.Load(), other.hits.Load())
	}
	if !rootless() && !strings.Contains(r.stderr, "sbx: denied connect "+op) {
		t.Errorf("as root the wall's refusal of the other port is not reported\n%v", r)
	}
}

// TestPublish: --publish HOSTPORT:18080 makes a server the program opens
// on the sandbox's loopback reachable from the host's 127.0.0.1:HOSTPORT
// (the docker run -p convention), root and rootless; the same port is
// closed on the host before the run and after it (the control). A
// malformed --publish, or one under --net none, refuses to run (125).
func TestPublish(t *testing.T) {
	b := newBox(t)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hostPort := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	url := "http://127.0.0.1:" + hostPort + "/from-host"
	if _, err := http.Get(url); err == nil {
		t.Fatalf("control: %s answers before the run", url)
	}
	server := `
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"sandbox " + self.path.encode())
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 18080), H)
print("listening", flush=True)
s.handle_request()
`
	p := b.start(opts{}, "run", "--publish", hostPort+":18080", "--", python, "-c", server)
	p.waitLine("listening")
	var body string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(url)
		if err != nil {
			continue
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(data)
		break
	}
	r := p.wait()
	skipForeignWall(t, r)
	if body != "sandbox /from-host" || r.code != 0 {
		t.Fatalf("want the sandbox's server to answer the host with %q, got %q\n%v", "sandbox /from-host", body, r)
	}
	if _, err := http.Get(url); err == nil {
		t.Errorf("control: %s still answers after the run", url)
	}
	for _, args := range [][]string{
		{"--publish", "0"}, {"--publish", "1.2.3:80"}, {"--publish", "80:70000"}, {"--publish", "[::1]8080"},
		{"--publish", "8080", "--net", "none"}, {"--publish", "8080", "--net", "host"},
	} {
		r := b.run(append(args, "--write", "--", "touch", "ran")...)
		if r.code != exitSbxError || !strings.Contains(r.stderr, "--publish") {
			t.Errorf("%q: want exit 125 naming --publish\n%v", args, r)
		}
	}
}

// TestNpmFailsFast: without --allow-host, "npm install" fails in seconds
// (NXDOMAIN at once, and npm_config_fetch_retries=0 so that npm does not
// retry it with a 10-60 s backoff: 70 s before), reports the registry's
// name with the --allow-host hint, and --env can still set the retries.
func TestNpmFailsFast(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm not installed")
	}
	b := newBox(t)
	writeFile(t, filepath.Join(b.ws, "package.json"), `{"name": "x", "version": "1.0.0"}`, 0o644)
	r := b.run("--write", "--", "npm", "install", "--no-audit", "--no-fund", "left-pad")
	skipForeignWall(t, r)
	if r.code == 0 || r.elapsed > 30*time.Second {
		t.Fatalf("want npm install to fail within 30 s (it took %v)\n%v", r.elapsed, r)
	}
	if !strings.Contains(r.stderr, "sbx: denied resolve registry.npmjs.org (no DNS in the sandbox)\n") {
		t.Errorf("the registry's name is not reported\n%v", r)
	}
	if r := b.run("--env", "npm_config_fetch_retries=7", "--", "npm", "config", "get", "fetch-retries"); r.stdout != "7\n" {
		t.Errorf("--env npm_config_fetch_retries=7: npm sees %q\n%v", r.stdout, r)
	}
}

// TestEgressLiteralsBeyondWall: as root the wall holds 8 forwarder
// endpoints beyond loopback; a ninth allowed address is served by the proxy
// alone, and one line says so. Rootless there is no such bound (the empty
// namespace is the wall): no line.
func TestEgressLiteralsBeyondWall(t *testing.T) {
	b := newBox(t)
	var args []string
	for i := 1; i <= 9; i++ {
		args = append(args, "--allow-host", fmt.Sprintf("10.1.0.%d:443", i))
	}
	r := b.run(append(args, "--", "true")...)
	skipForeignWall(t, r)
	const line = "sbx: warning: --allow-host: the network wall holds 8 endpoints beyond loopback; 10.1.0.9:443 is reached through the proxy only"
	if want := !rootless(); r.code != 0 || strings.Contains(r.stderr, line) != want {
		t.Errorf("want exit 0 and the line %q: %v\n%v", line, want, r)
	}
}

// TestToolVersionsQuiet: the harmless probes that common tools make on
// start (npm's NETLINK_ROUTE socket, pip's IPv6 check, curl's resolver and
// hostname lookup) print no "sbx: denied" line, and the version they print
// outside; a real attempt beyond loopback in the same sandbox is reported
// (the control, where the wall reports).
func TestToolVersionsQuiet(t *testing.T) {
	b := newBox(t)
	for _, tc := range []struct {
		name string
		argv []string
	}{
		{"npm", []string{"npm", "--version"}},
		{"pip", []string{python, "-m", "pip", "--version"}},
		{"curl", []string{"curl", "--version"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := exec.Command(tc.argv[0], tc.argv[1:]...).Output()
			if err != nil {
				t.Skipf("%v fails outside the sandbox (not installed?): %v", tc.argv, err)
			}
			b := b.in(t)
			r := b.run(append([]string{"--"}, tc.argv...)...)
			skipForeignWall(t, r)
			if r.code != 0 || r.stdout != string(out) {
				t.Fatalf("want %v to print %q, as outside\n%v", tc.argv, out, r)
			}
			if strings.Contains(r.stderr, "sbx: denied") {
				t.Errorf("a harmless probe was reported\n%v", r)
			}
		})
	}
	t.Run("control", func(t *testing.T) {
		if !bpfReports() {
			t.Skip("no wall reports here (the empty namespace refuses unreported)")
		}
		r := b.in(t).run("--", "curl", "-sS", "--max-time", "5", "http://192.0.2.1/")
		skipForeignWall(t, r)
		if !strings.Contains(r.stderr, "sbx: denied connect 192.0.2.1:80 (") {
			t.Errorf("want the connect beyond loopback reported\n%v", r)
		}
	})
}
