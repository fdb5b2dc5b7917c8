package main

// Issue 25, classes 6 and 8: the DNS-rebinding guard knows the host's own
// addresses, and sbx's lines about a sandbox's doing carry no raw control
// or bidi character of the sandbox's.

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sbx-sandbox/sbx/internal/sbxtest"
)

// ownAddr puts a documentation address (198.51.100.0/24, public to the
// guard's fixed lists) on the host's lo for the test, so that it is one of
// the host's own non-loopback addresses, and removes it at the end.
func ownAddr(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		sbxtest.Skip(t, sbxtest.Root, "adding an address to the host's lo needs root")
	}
	a := "198.51.100." + strconv.Itoa(10+os.Getpid()%200)
	if out, err := exec.Command("ip", "addr", "add", a+"/32", "dev", "lo").CombinedOutput(); err != nil {
		t.Fatalf("ip addr add %s/32 dev lo: %v: %s", a, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "addr", "del", a+"/32", "dev", "lo").CombinedOutput(); err != nil {
			t.Errorf("ip addr del %s/32 dev lo: %v: %s", a, err, out)
		}
	})
	return a
}

// TestEgressOwnAddress: an allowed name that resolves to one of the host's
// own non-loopback addresses is refused through the proxy, a CONNECT
// tunnel and the transparent forwarder, each refusal reported, with no
// advice to add the --allow-host that was given. The controls: the same
// listener (on 0.0.0.0) answers on the host, and answers the sandbox when
// an IP rule names the address itself.
func TestEgressOwnAddress(t *testing.T) {
	addr := ownAddr(t)
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "host service")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	e := newEgressBox(t, addr+" own.test")
	url := "http://own.test:" + port + "/"

	if r := e.host(opts{}, "curl", "-sS", "--noproxy", "*", "http://"+addr+":"+port+"/"); r.code != 0 || r.stdout != "host service" {
		t.Fatalf("control: the service must answer on the host at %s\n%v", addr, r)
	}
	vf := filepath.Join(e.tempDir(), "violations.jsonl")
	script := "curl -s -o /dev/null -w '%{http_code}\\n' " + url + "; " +
		"curl -s -p -o /dev/null -w '%{http_code}\\n' " + url + "; " +
		"curl -s --noproxy '*' --max-time 10 -o /dev/null -w '%{http_code}\\n' " + url + "; echo"
	r := e.run("--violations", vf, "--allow-host", "own.test:"+port, "--", "sh", "-c", script)
	skipForeignWall(t, r)
	// 403 from the proxy; the CONNECT refused (curl -p then has no HTTP
	// code: 000) and the forwarder's connection closed without a
	// response (000).
	if want := "403\n000\n000\n\n"; r.code != 0 || r.stdout != want {
		t.Errorf("want %q\n%v", want, r)
	}
	reason := "resolves to the host's own address " + addr
	if line := "sbx: denied connect own.test:" + port + " (" + reason + ")\n"; !strings.Contains(r.stderr, line) {
		t.Errorf("stderr lacks %q\n%v", line, r)
	}
	if strings.Contains(r.stderr, "--allow-host own.test") {
		t.Errorf("the hint advises the --allow-host that was given\n%v", r)
	}
	if !strings.Contains(r.stderr, "DNS rebinding") {
		t.Errorf("the hint does not say why\n%v", r)
	}
	n := 0
	for _, v := range readProxyViolations(t, vf) {
		if v.Tier == "proxy" && v.Target == "own.test:"+port && v.Reason == reason {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d refusals of own.test in --violations, want 3 (proxy, CONNECT, forwarder)", n)
	}

	// Control: the address itself, allowed by an IP rule (the user's
	// explicit choice), is reached.
	r = e.run("--allow-host", addr+":"+port, "--", "curl", "-sS", "http://"+addr+":"+port+"/")
	if r.code != 0 || r.stdout != "host service" {
		t.Errorf("control: --allow-host %s:%s must reach the service\n%v", addr, port, r)
	}
}

// rawQuery is a Python program that sends one DNS query (type A) for the
// name given as hex labels in argv[1] (comma-separated) to the sandbox's
// resolver and prints the answer's RCODE.
const rawQuery = `
import socket, sys
labels = [bytes.fromhex(h) for h in sys.argv[1].split(",")]
q = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
q += b"".join(bytes([len(l)]) + l for l in labels) + b"\x00\x00\x01\x00\x01"
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(5)
s.sendto(q, ("127.0.0.1", 53))
print("rcode", s.recv(512)[3] & 15)
`

// TestDeniedNameEscaped: a program looks up, by a raw UDP query to the
// sandbox's resolver, a name made of every C0 control, DEL, C1 and bidi
// characters and invalid UTF-8; sbx's denial line and hint show it with
// visible escapes, and sbx's stderr holds no raw control or bidi
// character at all (the name cannot forge a line or move the terminal).
// The control: the query itself was answered (NXDOMAIN) and reported.
func TestDeniedNameEscaped(t *testing.T) {
	b := newBox(t)
	var c0 []byte
	for c := 1; c < 0x20; c++ {
		c0 = append(c0, byte(c))
	}
	c0 = append(c0, 0x7f)
	labels := [][]byte{
		[]byte("a\x1b[2J\x1b]0;x\x07sbx: fake\r\nsbx"),
		c0,
		[]byte("\u0085\u009b\u202eevil\u2066\u200f\u061c\xff"),
		[]byte("test"),
	}
	var hexLabels []string
	for _, l := range labels {
		hexLabels = append(hexLabels, fmt.Sprintf("%x", l))
	}
	r := b.run("--", python, "-c", rawQuery, strings.Join(hexLabels, ","))
	skipForeignWall(t, r)
	if r.code != 0 || r.stdout != "rcode 3\n" {
		t.Fatalf("want NXDOMAIN for the raw query\n%v", r)
	}
	// The escaped name, written out by hand.
	var allC0 strings.Builder
	for c := 1; c < 0x20; c++ {
		fmt.Fprintf(&allC0, `\x%02x`, c)
	}
	allC0.WriteString(`\x7f`)
	escaped := `a\x1b[2J\x1b]0;x\x07sbx: fake\x0d\x0asbx.` + allC0.String() + `.\u0085\u009b\u202eevil\u2066\u200f\u061c\xff.test`
	if line := "sbx: denied resolve " + escaped + " (no DNS in the sandbox)\n"; !strings.Contains(r.stderr, line) {
		t.Errorf("stderr lacks %q\n%q", line, r.stderr)
	}
	if hint := "to let the program reach " + escaped + ", run sbx with --allow-host " + escaped + "[:PORT]\n"; !strings.Contains(r.stderr, hint) {
		t.Errorf("the hint does not name the escaped name\n%q", r.stderr)
	}
	if !utf8.ValidString(r.stderr) {
		t.Errorf("stderr is not valid UTF-8: %q", r.stderr)
	}
	for i, c := range r.stderr {
		if (c < 0x20 && c != '\n') || (c >= 0x7f && c <= 0x9f) || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) || c == 0x200e || c == 0x200f || c == 0x061c {
			t.Fatalf("raw %U at byte %d of stderr: %q", c, i, r.stderr)
		}
	}
	for _, l := range strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n") {
		if strings.HasPrefix(l, "sbx: fake") {
			t.Errorf("a forged line: %q", l)
		}
	}
}

// TestDNSFullTable: when the sandbox's DNS has given addresses to as many
// allowed names as it can (a wildcard rule, maxForwardNames = 200), the
// next allowed name is refused with that reason, and nothing claims the
// sandbox has no DNS or advises the --allow-host that allows it. The
// control: the names before it resolved.
func TestDNSFullTable(t *testing.T) {
	e := newEgressBox(t)
	script := `
import socket
ok = 0
for i in range(201):
    try:
        socket.getaddrinfo("n%d.wild.test" % i, 443, socket.AF_INET)
        ok += 1
    except socket.gaierror:
        print("refused", i)
print("resolved", ok)
`
	r := e.run("--allow-host", "*.wild.test", "--", python, "-c", script)
	skipForeignWall(t, r)
	if want := "refused 200\nresolved 200\n"; r.code != 0 || r.stdout != want {
		t.Fatalf("want %q\n%v", want, r)
	}
	if line := "sbx: denied resolve n200.wild.test (allowed, but the sandbox's DNS answers at most 200 allowed names)\n"; !strings.Contains(r.stderr, line) {
		t.Errorf("stderr lacks %q\n%v", line, r)
	}
	for _, lie := range []string{"no DNS", "--allow-host n200.wild.test"} {
		if strings.Contains(r.stderr, lie) {
			t.Errorf("stderr says %q\n%v", lie, r)
		}
	}
}
