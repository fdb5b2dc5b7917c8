package main

// Kernel policy tests (issue 3) against the real kernel: the network wall
// (cgroup BPF) and seccomp refuse every socket but AF_UNIX, the mount
// namespace and Landlock keep files outside the workspace out of reach, the
// canaries stop a run whose protection is broken, and every denial is
// reported. Each denial is shown to succeed on the host (the control), and
// the errno asserted is the one only the protection produces: the sandbox's
// empty network namespace alone would give ECONNREFUSED, not EPERM.
//
// The probe (testdata/policy/probe.py) runs the same operations inside and
// outside and prints "ARG OK" or "ARG ERRNO@STEP" per operation.

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/bpf/lsm"
	"github.com/sbx-sandbox/sbx/bpf/tracer"
	"github.com/sbx-sandbox/sbx/gate"
	"github.com/sbx-sandbox/sbx/internal/sbxtest"
	"github.com/sbx-sandbox/sbx/runner"
	"github.com/sbx-sandbox/sbx/sandbox"
)

// probeSrc is the probe; python (limits_integration_test.go) runs it on
// both sides, by absolute path (the host's PATH may lead to another python).
var probeSrc = filepath.Join("..", "..", "testdata", "policy", "probe.py")

// probeBox is newBox plus the probe copied into the workspace (readable
// inside, since the workspace is mounted at its host path).
func probeBox(t *testing.T) (*box, string) {
	t.Helper()
	b := newBox(t)
	if _, err := os.Stat(python); err != nil {
		sbxtest.Skip(t, sbxtest.Python3, fmt.Sprintf("the probe needs %s: %v", python, err))
	}
	src, err := os.ReadFile(probeSrc)
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	p := filepath.Join(b.ws, "probe.py")
	writeFile(t, p, string(src), 0o755)
	return b, p
}

// probeResults parses the probe's output; each of args must have a line.
func probeResults(t *testing.T, r result, args []string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, l := range lines(r.stdout) {
		if arg, res, ok := strings.Cut(l, " "); ok {
			m[arg] = res
		}
	}
	for _, a := range args {
		if _, ok := m[a]; !ok {
			t.Fatalf("probe printed no result for %q\n%v", a, r)
		}
	}
	return m
}

// loopback is a set of listeners on the host's loopback (the test's own
// network namespace): an HTTP server on 127.0.0.1 and one on [::1], and a
// UDP socket on each, counting what reaches them.
type loopback struct {
	http4, http6 *httptest.Server
	port4, port6 int
	udp4, udp6   *net.UDPConn
	uport4       int
	uport6       int
	conns        atomic.Int64 // TCP connections accepted, both servers
}

func newLoopback(t *testing.T) *loopback {
	t.Helper()
	lb := &loopback{}
	handler := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	count := func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			lb.conns.Add(1)
		}
	}
	serve := func(network, addr string) (*httptest.Server, int) {
		l, err := net.Listen(network, addr)
		if err != nil {
			t.Fatalf("listen %s %s: %v", network, addr, err)
		}
		s := httptest.NewUnstartedServer(handler)
		s.Listener.Close()
		s.Listener = l
		s.Config.ConnState = count
		s.Start()
		t.Cleanup(s.Close)
		return s, l.Addr().(*net.TCPAddr).Port
	}
	lb.http4, lb.port4 = serve("tcp4", "127.0.0.1:0")
	lb.http6, lb.port6 = serve("tcp6", "[::1]:0")
	udp := func(network, addr string) (*net.UDPConn, int) {
		c, err := net.ListenUDP(network, &net.UDPAddr{IP: net.ParseIP(addr)})
		if err != nil {
			t.Fatalf("listen %s %s: %v", network, addr, err)
		}
		t.Cleanup(func() { c.Close() })
		return c, c.LocalAddr().(*net.UDPAddr).Port
	}
	lb.udp4, lb.uport4 = udp("udp4", "127.0.0.1")
	lb.udp6, lb.uport6 = udp("udp6", "::1")
	return lb
}

// waitConns waits until the listeners have accepted n connections in all
// (the server accepts asynchronously) and reports whether the count is
// exactly n.
func (lb *loopback) waitConns(n int64) bool {
	for deadline := time.Now().Add(10 * time.Second); lb.conns.Load() < n && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	return lb.conns.Load() == n
}

// datagrams returns the payloads waiting on c (none arrive after a short
// wait: the senders have exited by then).
func datagrams(c *net.UDPConn) []string {
	var out []string
	buf := make([]byte, 2048)
	for {
		_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		n, _, err := c.ReadFromUDP(buf)
		if err != nil {
			return out
		}
		out = append(out, string(buf[:n]))
	}
}

// readViolations decodes a --violations file: one JSON object per line
// with exactly the keys of gate.Violation.
func readViolations(t *testing.T, path string) []gate.Violation {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("--violations file: %v", err)
	}
	want := []string{"comm", "errno", "op", "pid", "target", "tier", "time"}
	var out []gate.Violation
	for i, l := range lines(string(data)) {
		var keys map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &keys); err != nil {
			t.Fatalf("--violations line %d %q: %v", i+1, l, err)
		}
		var got []string
		for k := range keys {
			got = append(got, k)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("--violations line %d has keys %q, want %q", i+1, got, want)
		}
		var v gate.Violation
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatalf("--violations line %d %q: %v", i+1, l, err)
		}
		out = append(out, v)
	}
	return out
}

// checkViolation checks one reported denial: what was attempted, by whom,
// refused by the network wall with EPERM, during the run.
func checkViolation(t *testing.T, v gate.Violation, op, target, comm string, since time.Time) {
	t.Helper()
	if v.Op != op || v.Target != target || v.Comm != comm || v.Errno != "EPERM" || v.Tier != "bpf" {
		t.Errorf("violation %+v, want op %q, target %q, comm %q, errno EPERM, tier bpf", v, op, target, comm)
	}
	if v.Pid <= 0 || v.Time.Before(since.Add(-time.Second)) || time.Since(v.Time) > time.Minute {
		t.Errorf("violation %+v: want a pid > 0 and the time of the run (started %v)", v, since)
	}
}

// deniedAnywhere matches an "sbx: denied" line even where sbx wrote it into
// the middle of a line of the program's own stderr (see
// TestViolationLinesKeepProgramLines).
var deniedAnywhere = regexp.MustCompile(`sbx: denied (\S+) (.+?) \((\d+) ([^)\n]+)\)\n`)

// netHintAnywhere matches sbx's one line, after the first refused network
// operation, on how to allow it.
var netHintAnywhere = regexp.MustCompile(`sbx: (the program has no network \(--net none\)|to let the program reach |the sandbox has no DNS; )[^\n]*\n`)

// deniedLines returns the "sbx: denied" lines of stderr, parsed, and the
// rest of stderr as lines, without the network hint.
func deniedLines(stderr string) (denied [][]string, rest []string) {
	for _, m := range deniedAnywhere.FindAllStringSubmatch(stderr, -1) {
		denied = append(denied, m[1:])
	}
	return denied, lines(netHintAnywhere.ReplaceAllString(deniedAnywhere.ReplaceAllString(stderr, ""), ""))
}

// quietTargets are the routine probes sbx refuses without a line (they are
// in --violations all the same).
var quietTargets = []string{"io_uring_setup"}

// writeHintLine is sbx's hint after a write refused by the read-only
// workspace.
const writeHintLine = "sbx: the workspace is mounted read-only; run sbx with --write to let the program change it"

// splitReport splits stderr into the program's own stderr and what sbx
// reported: the "sbx: denied" lines as "OP TARGET COMM", and how many
// --write hints.
func splitReport(stderr string) (own string, denied []string, hints int) {
	d, rest := deniedLines(stderr)
	for _, m := range d {
		denied = append(denied, m[0]+" "+m[1]+" "+m[3])
	}
	var kept []string
	for _, l := range rest {
		if l == writeHintLine {
			hints++
			continue
		}
		kept = append(kept, l)
	}
	if len(kept) > 0 {
		own = strings.Join(kept, "\n") + "\n"
	}
	return own, denied, hints
}

// TestNetToolsDenied: curl, wget, bash's /dev/tcp and nc cannot reach a
// listener on the host's loopback from inside (the wall refuses their
// socket with EPERM and reports it), and reach it from the host.
func TestNetToolsDenied(t *testing.T) {
	b := newBox(t)
	tcp4 := "AF_INET SOCK_STREAM IPPROTO_TCP"
	tcp6 := "AF_INET6 SOCK_STREAM IPPROTO_TCP"
	for _, tc := range []struct {
		name, tool string
		argv       func(lb *loopback) []string
		target     string // of the reported denial
		code       int    // inside
		// stderr is what the tool says inside, besides sbx's line: the
		// errno where the tool prints one (curl and nc do not: there the
		// reported EPERM of the wall is the proof).
		stderr func(lb *loopback) []string
		stdout string // on the host
	}{
		{
			name: "curl", tool: "curl",
			argv:   func(lb *loopback) []string { return []string{"curl", "-sS", "-m", "10", lb.http4.URL + "/"} },
			target: tcp4, code: 7,
			stderr: func(lb *loopback) []string {
				return []string{fmt.Sprintf("curl: (7) Failed to connect to 127.0.0.1 port %d after ", lb.port4), "ms: Couldn't connect to server"}
			},
			stdout: "ok\n",
		},
		{
			name: "curl-ipv6", tool: "curl",
			argv:   func(lb *loopback) []string { return []string{"curl", "-sS", "-g", "-m", "10", lb.http6.URL + "/"} },
			target: tcp6, code: 7,
			stderr: func(lb *loopback) []string {
				return []string{fmt.Sprintf("curl: (7) Failed to connect to ::1 port %d after ", lb.port6), "ms: Couldn't connect to server"}
			},
			stdout: "ok\n",
		},
		{
			name: "wget", tool: "wget",
			argv:   func(lb *loopback) []string { return []string{"wget", "-nv", "-t", "1", "-O-", lb.http4.URL + "/"} },
			target: tcp4, code: 4,
			stderr: func(*loopback) []string { return []string{"failed: Operation not permitted."} },
			stdout: "ok\n",
		},
		{
			name: "bash-dev-tcp", tool: "bash",
			argv: func(lb *loopback) []string {
				return []string{"bash", "-c", fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d", lb.port4)}
			},
			target: tcp4, code: 1,
			stderr: func(lb *loopback) []string {
				return []string{"bash: socket: Operation not permitted", fmt.Sprintf("/dev/tcp/127.0.0.1/%d: Operation not permitted", lb.port4)}
			},
		},
		{
			name: "nc", tool: "nc",
			argv: func(lb *loopback) []string {
				return []string{"nc", "-z", "-w", "10", "127.0.0.1", strconv.Itoa(lb.port4)}
			},
			target: tcp4, code: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := b.in(t)
			tool := tc.tool
			if _, err := exec.LookPath(tool); err != nil {
				t.Skipf("%s is not installed: %v", tool, err)
			}
			lb := newLoopback(t)
			argv := tc.argv(lb)
			vf := filepath.Join(b.tempDir(), "violations.jsonl")
			start := time.Now()
			r := b.run(append([]string{"--net", "none", "--violations", vf, "--"}, argv...)...)
			if r.code != tc.code || r.stdout != "" {
				t.Errorf("%q in the sandbox: want exit %d and no output\n%v", argv, tc.code, r)
			}
			denied, rest := deniedLines(r.stderr)
			if tc.stderr != nil {
				for _, want := range tc.stderr(lb) {
					if !strings.Contains(strings.Join(rest, "\n"), want) {
						t.Errorf("%q in the sandbox: stderr lacks %q\n%v", argv, want, r)
					}
				}
			}
			if tc.stderr == nil && len(rest) > 0 {
				t.Errorf("%q in the sandbox: unexpected stderr %q", argv, rest)
			}
			vs := readViolations(t, vf)
			if !bpfReports() {
				// Rootless: seccomp refuses the socket, silently.
				if len(vs) != 0 || len(denied) != 0 {
					t.Errorf("%q rootless: reported %+v, denied lines %q; want no report (no BPF wall)", argv, vs, denied)
				}
			} else {
				if len(vs) == 0 {
					t.Fatalf("%q: no violation reported\n%v", argv, r)
				}
				for _, v := range vs {
					checkViolation(t, v, "socket", tc.target, tool, start)
				}
				want := [][]string{{"socket", tc.target, strconv.Itoa(vs[0].Pid), tool}}
				if !slices.EqualFunc(denied, want, slices.Equal) {
					t.Errorf("%q: denied lines %q, want %q", argv, denied, want)
				}
			}
			if n := lb.conns.Load(); n != 0 {
				t.Errorf("%q in the sandbox: %d connection(s) reached the host listener", argv, n)
			}
			// Control: the same command on the host reaches the listener.
			c := b.host(opts{}, argv[0], argv[1:]...)
			if c.code != 0 || c.stdout != tc.stdout {
				t.Errorf("control: %q on the host: want exit 0 and %q\n%v", argv, tc.stdout, c)
			}
			if !lb.waitConns(1) {
				t.Errorf("control: %q on the host did not reach the listener", argv)
			}
		})
	}
}

// TestNetSocketFamilies: inside, every socket but AF_UNIX is refused with
// EPERM at socket(): AF_INET and AF_INET6 (TCP, UDP) by the network wall,
// which reports them; raw sockets by the missing CAP_NET_RAW (the kernel
// checks it before the wall's hook runs); AF_NETLINK, AF_PACKET and AF_VSOCK
// by seccomp; the denial tracer reports these. On the host each works, and the connections and datagrams
// reach the listeners.
func TestNetSocketFamilies(t *testing.T) {
	b, probe := probeBox(t)
	lb := newLoopback(t)
	args := []string{
		"tcp4:" + strconv.Itoa(lb.port4), "tcp6:" + strconv.Itoa(lb.port6),
		"udp4:" + strconv.Itoa(lb.uport4), "udp6:" + strconv.Itoa(lb.uport6),
		"raw4", "raw6", "netlink", "packet", "vsock",
	}
	vf := filepath.Join(b.tempDir(), "violations.jsonl")
	start := time.Now()
	r := b.run(append([]string{"--net", "none", "--violations", vf, "--", python, probe}, args...)...)
	if r.code != 0 {
		t.Fatalf("probe in the sandbox\n%v", r)
	}
	in := probeResults(t, r, args)
	for _, a := range args {
		if in[a] != "EPERM@socket" {
			t.Errorf("%s in the sandbox = %s, want EPERM@socket", a, in[a])
		}
	}
	if n := lb.conns.Load(); n != 0 {
		t.Errorf("%d connection(s) from the sandbox reached the host listeners", n)
	}
	if d := append(datagrams(lb.udp4), datagrams(lb.udp6)...); len(d) != 0 {
		t.Errorf("datagrams from the sandbox reached the host: %q", d)
	}
	// Every refusal, in the order attempted, once, and nothing else (the
	// canaries' own are left out): the wall's by the wall, the others by
	// the denial tracer, with the tier that refused them.
	want := []struct{ target, tier string }{
		{"AF_INET SOCK_STREAM IPPROTO_TCP", "bpf"}, {"AF_INET6 SOCK_STREAM IPPROTO_TCP", "bpf"},
		{"AF_INET SOCK_DGRAM IPPROTO_UDP", "bpf"}, {"AF_INET6 SOCK_DGRAM IPPROTO_UDP", "bpf"},
		{"AF_INET SOCK_RAW IPPROTO_ICMP", "capability"}, {"AF_INET6 SOCK_RAW IPPROTO_ICMPV6", "capability"},
		{"AF_NETLINK SOCK_RAW", "seccomp"}, {"AF_PACKET SOCK_RAW proto 768", "seccomp"},
		{"AF_VSOCK SOCK_STREAM", "seccomp"},
	}
	want = reported(want) // rootless: seccomp refuses them all, silently
	vs := readViolations(t, vf)
	if len(vs) != len(want) {
		t.Errorf("%d reported denials, want %d: %+v", len(vs), len(want), vs)
	}
	for i, v := range vs {
		if i >= len(want) {
			break
		}
		if v.Tier == "bpf" {
			checkViolation(t, v, "socket", want[i].target, "python3", start)
		} else if v.Op != "socket" || v.Target != want[i].target || v.Tier != want[i].tier || v.Errno != "EPERM" || v.Comm != "python3" {
			t.Errorf("violation %+v, want socket %q EPERM, tier %s", v, want[i].target, want[i].tier)
		}
	}

	var out map[string]string
	if rootless() {
		// An ordinary user reaches the loopback listeners; its raw and
		// packet sockets need a network namespace of its own, in which
		// it is uid 0 (as the program is: without the filter, these
		// would be the program's).
		out = probeResults(t, b.host(opts{}, python, append([]string{probe}, args[:4]...)...), args[:4])
		for a, res := range probeResults(t, b.hostPrivileged(opts{}, "n", python, append([]string{probe}, args[4:]...)...), args[4:]) {
			out[a] = res
		}
	} else {
		c := b.host(opts{}, python, append([]string{probe}, args...)...)
		out = probeResults(t, c, args)
	}
	for _, a := range args {
		switch {
		case a == "vsock" && out[a] == "EAFNOSUPPORT@socket":
			t.Logf("control: vsock not available on this host (%s): its EPERM inside is still seccomp's", out[a])
		case out[a] != "OK":
			t.Errorf("control: %s on the host = %s, want OK", a, out[a])
		}
	}
	if !lb.waitConns(2) {
		t.Errorf("control: %d connections from the host probe reached the listeners, want 2", lb.conns.Load())
	}
	for _, u := range []struct {
		c   *net.UDPConn
		arg string
	}{{lb.udp4, args[2]}, {lb.udp6, args[3]}} {
		if d := datagrams(u.c); !slices.Equal(d, []string{"probe " + u.arg}) {
			t.Errorf("control: datagrams of %s on the host = %q", u.arg, d)
		}
	}
}

// TestNetPassedSocketsClosed: a connected TCP socket and a UDP socket that
// sbx inherits as fds 3 and 4 do not reach the program.
func TestNetPassedSocketsClosed(t *testing.T) {
	b, probe := probeBox(t)
	lb := newLoopback(t)
	tcp, err := net.Dial("tcp4", lb.http4.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	udp, err := net.DialUDP("udp4", nil, lb.udp4.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	var files []*os.File
	for _, c := range []interface{ File() (*os.File, error) }{tcp.(*net.TCPConn), udp} {
		f, err := c.File()
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		files = append(files, f)
	}
	o := opts{extraFiles: files} // fds 3 and 4
	args := []string{"fds", "fd:3", "fd:4"}
	r := b.runOpts(o, append([]string{"--", python, probe}, args...)...)
	if r.code != 0 {
		t.Fatalf("probe in the sandbox\n%v", r)
	}
	in := probeResults(t, r, args)
	if in["fds"] != "0,1,2" || in["fd:3"] != "EBADF@socket" || in["fd:4"] != "EBADF@socket" {
		t.Errorf("in the sandbox: fds %s, fd:3 %s, fd:4 %s; want 0,1,2 and EBADF@socket twice", in["fds"], in["fd:3"], in["fd:4"])
	}
	const prog = "import socket; socket.socket(fileno=3)"
	if r := b.runOpts(o, "--", python, "-c", prog); r.code != 1 || !strings.Contains(r.stderr, "OSError: [Errno 9] Bad file descriptor") {
		t.Errorf("socket.socket(fileno=3) in the sandbox: want EBADF\n%v", r)
	}
	// Control: the host process gets both sockets and can use them.
	c := b.host(o, python, append([]string{probe}, args...)...)
	out := probeResults(t, c, args)
	// (Descriptors the test itself inherited without close-on-exec show
	// up here too, hence only a prefix.)
	if !strings.HasPrefix(out["fds"], "0,1,2,3,4") || out["fd:3"] != "OK" || out["fd:4"] != "OK" {
		t.Errorf("control on the host: fds %s, fd:3 %s, fd:4 %s; want 0,1,2,3,4 and OK twice", out["fds"], out["fd:3"], out["fd:4"])
	}
	if c := b.host(o, python, "-c", prog+".send(b'GET / HTTP/1.0\\r\\n\\r\\n')"); c.code != 0 {
		t.Errorf("control: using fd 3 on the host\n%v", c)
	}
	rd := bufio.NewReader(tcp)
	_ = tcp.SetReadDeadline(time.Now().Add(10 * time.Second))
	if status, err := rd.ReadString('\n'); err != nil || !strings.HasPrefix(status, "HTTP/1.0 200") {
		t.Errorf("control: the request sent through fd 3 got %q, %v", status, err)
	}
}

// TestViolationReport: denials are reported on stderr once per distinct
// operation with a count at exit, and each one as a JSON line with
// --violations; the program's stdout carries nothing of sbx.
func TestViolationReport(t *testing.T) {
	b := newBox(t)
	const prog = `import socket
print("start", flush=True)
failed = 0
for fam, typ, n in [(socket.AF_INET, socket.SOCK_STREAM, 50), (socket.AF_INET6, socket.SOCK_DGRAM, 1)]:
    for _ in range(n):
        try:
            socket.socket(fam, typ).close()
        except PermissionError:
            failed += 1
print("failed", failed)
`
	if c := b.host(opts{}, python, "-c", prog); c.code != 0 || c.stdout != "start\nfailed 0\n" || c.stderr != "" {
		t.Fatalf("control: the sockets fail on the host too\n%v", c)
	}
	vf := filepath.Join(b.tempDir(), "violations.jsonl")
	start := time.Now()
	r := b.run("--net", "none", "--violations", vf, "--", python, "-c", prog)
	if r.code != 0 || r.stdout != "start\nfailed 51\n" {
		t.Fatalf("in the sandbox: want 51 refused sockets and stdout untouched\n%v", r)
	}
	needRootTier(t, "bpf-report")
	vs := readViolations(t, vf)
	if len(vs) != 51 {
		t.Fatalf("--violations has %d lines, want 51 (one per attempt)", len(vs))
	}
	for i, v := range vs {
		target := "AF_INET SOCK_STREAM IPPROTO_TCP"
		if i == 50 {
			target = "AF_INET6 SOCK_DGRAM IPPROTO_UDP"
		}
		checkViolation(t, v, "socket", target, "python3", start)
		if v.Pid != vs[0].Pid {
			t.Errorf("violation %d: pid %d, want the one process's %d", i, v.Pid, vs[0].Pid)
		}
	}
	pid := strconv.Itoa(vs[0].Pid)
	want := "sbx: denied socket AF_INET SOCK_STREAM IPPROTO_TCP (" + pid + " python3)\n" +
		"sbx: the program has no network (--net none); --net loopback gives it its own loopback, --allow-host HOST[:PORT] a host through sbx's proxy\n" +
		"sbx: denied socket AF_INET6 SOCK_DGRAM IPPROTO_UDP (" + pid + " python3)\n" +
		"sbx: 51 operation(s) denied in all (2 distinct)\n"
	if r.stderr != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", r.stderr, want)
	}
	// --violations appends: a second run adds its own lines.
	if r := b.run("--net", "none", "--violations", vf, "--", python, "-c", "import socket\ntry: socket.socket()\nexcept OSError: pass"); r.code != 0 {
		t.Fatalf("second run\n%v", r)
	}
	if vs := readViolations(t, vf); len(vs) != 52 {
		t.Errorf("--violations after a second run has %d lines, want 52 (appended)", len(vs))
	}
}

// TestViolationLinesKeepProgramLines: sbx's "denied" lines go to the stderr
// the program writes to as well, but never into the middle of one of the
// program's lines. The program writes half a line, is denied, waits, and
// ends the line (found by this suite; fixed in 8c34511).
func TestViolationLinesKeepProgramLines(t *testing.T) {
	b := newBox(t)
	needRootTier(t, "bpf-report")
	const prog = `import socket, sys, time
sys.stderr.write("partial "); sys.stderr.flush()
try:
    socket.socket()
except OSError:
    pass
time.sleep(0.5)
sys.stderr.write("line\n")
`
	r := b.run("--net", "none", "--", python, "-c", prog)
	if r.code != 0 {
		t.Fatalf("in the sandbox\n%v", r)
	}
	if !slices.Contains(lines(r.stderr), "partial line") {
		t.Errorf("the program's stderr line \"partial line\" was split by sbx: %q", r.stderr)
	}
	if denied, _ := deniedLines(r.stderr); len(denied) != 1 {
		t.Errorf("want one denied line, got %q", r.stderr)
	}
}

// TestViolationsOtherTiers: refusals that no sbx program makes itself are
// reported too, by the denial tracer, each with the operation, target,
// errno and tier of what the program attempted: seccomp's (a socket of
// another family, syscalls of the deny list), Landlock's (an open outside
// the policy, by absolute and by relative path) and the read-only mounts'
// (the workspace without --write, the system), and a write refused by the
// read-only workspace points to --write, once. What is no denial (a link
// across mounts: the kernel's EXDEV) or is reported by the network wall
// already is not reported (again). Each operation is shown to be refused
// inside, and to succeed outside (or with --write).
func TestViolationsOtherTiers(t *testing.T) {
	b, probe := probeBox(t)
	outside := b.tempDir() // host-only: a mount point and a place to write
	if err := os.Chmod(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	name := "sbx-it-" + strconv.Itoa(os.Getpid()) + "-" + filepath.Base(outside)
	// A relative path from the workspace up to /.sbx/sbx, which Landlock
	// refuses (the sandbox's canary file).
	up := strings.Repeat("../", strings.Count(b.ws, "/")) + ".sbx/sbx"
	for _, tc := range []struct {
		name  string
		flags []string
		args  []string // probe arguments inside
		in    []string // their results inside
		host  []string // the same operations on the host, which must succeed
		// hostRootless are the results of host for an ordinary user,
		// where they are not OK: the refusal of the operation's
		// permission, not of a read-only mount.
		hostRootless []string
		want         []denial
		hint         bool
	}{
		{
			name: "seccomp-socket", args: []string{"netlink"}, in: []string{"EPERM@socket"}, host: []string{"netlink"},
			want: []denial{{"socket", "AF_NETLINK SOCK_RAW", "EPERM", "seccomp"}},
		},
		{
			name: "seccomp-deny-list", args: []string{"uring", "mount:" + outside},
			in: []string{"EPERM@io_uring_setup", "EPERM@mount"}, host: []string{"uring", "mount:" + outside},
			want: []denial{{"syscall", "io_uring_setup", "EPERM", "seccomp"}, {"syscall", "mount", "EPERM", "seccomp"}},
		},
		{
			name: "landlock-open", args: []string{"read:/.sbx/sbx", "read:" + up},
			in: []string{"EACCES@open", "EACCES@open"}, host: []string{"read:" + sbxBin},
			want: []denial{{"open", "/.sbx/sbx", "EACCES", "landlock"}, {"open", "/.sbx/sbx", "EACCES", "landlock"}},
		},
		{
			name: "landlock-exec", args: []string{"exec:/.sbx/sbx"}, in: []string{"EACCES@exec"}, host: []string{"exec:" + sbxBin},
			want: []denial{{"exec", "/.sbx/sbx", "EACCES", "landlock"}},
		},
		{
			name: "read-only-workspace", args: []string{"write:f", "write:g"}, in: []string{"EROFS@open", "EROFS@open"},
			want: []denial{{"open", filepath.Join(b.ws, "f"), "EROFS", "mount"}, {"open", filepath.Join(b.ws, "g"), "EROFS", "mount"}},
			hint: true,
		},
		{
			name: "writable-workspace", flags: []string{"--write"}, args: []string{"write:f", "write:g"}, in: []string{"OK", "OK"},
		},
		{
			name: "read-only-system", args: []string{"write:/etc/" + name, "mkdir:/usr/" + name},
			in: []string{"EROFS@open", "EROFS@mkdir"}, host: []string{"write:/etc/" + name, "mkdir:/usr/" + name},
			hostRootless: []string{"EACCES@open", "EACCES@mkdir"},
			want:         []denial{{"open", "/etc/" + name, "EROFS", "mount"}, {"mkdir", "/usr/" + name, "EROFS", "mount"}},
		},
		{
			// The workspace is its own mount: the kernel refuses the
			// link with EXDEV before Landlock is asked.
			name: "link-across-mounts", flags: []string{"--write"}, args: []string{"link:/etc/hostname:" + filepath.Join(b.ws, "hl")},
			in: []string{"EXDEV@link"}, host: []string{"link:/etc/hostname:" + filepath.Join(outside, "hl")},
			// fs.protected_hardlinks: a user links only its own files.
			hostRootless: []string{"EPERM@link"},
		},
		{
			name: "net-wall-once", args: []string{"tcp4:9"}, in: []string{"EPERM@socket"},
			want: []denial{{"socket", "AF_INET SOCK_STREAM IPPROTO_TCP", "EPERM", "bpf"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := b.in(t)
			vf := filepath.Join(b.tempDir(), "violations.jsonl")
			start := time.Now()
			r := b.run(append(append(append([]string{"--net", "none", "--violations", vf}, tc.flags...), "--", python, probe), tc.args...)...)
			if r.code != 0 {
				t.Fatalf("probe in the sandbox\n%v", r)
			}
			res := probeResults(t, r, tc.args)
			for i, a := range tc.args {
				if res[a] != tc.in[i] {
					t.Errorf("%s in the sandbox = %s, want %s", a, res[a], tc.in[i])
				}
			}
			if bpfReports() {
				checkReported(t, r, vf, start, tc.want, tc.hint)
			}
			if len(tc.host) > 0 {
				// Rootless, uid 0 of namespaces of the user's own (the
				// mount needs one): the operations the filter and the
				// policy refuse are the user's there.
				c := b.hostPrivileged(opts{}, "m", python, append([]string{probe}, tc.host...)...)
				res := probeResults(t, c, tc.host)
				for i, a := range tc.host {
					want := "OK"
					if rootless() && tc.hostRootless != nil {
						want = tc.hostRootless[i]
					}
					if res[a] != want {
						t.Errorf("control: %s on the host = %s, want %s", a, res[a], want)
					}
				}
			}
			needRootTier(t, "bpf-report")
		})
	}
}

// denial is one reported refusal: operation, target, errno and tier.
type denial struct{ op, target, errno, tier string }

// checkReported checks what sbx reported of a run of the probe: want in
// the --violations file vf (by python3, during the run), each distinct
// operation once in the "sbx: denied" lines, and one --write hint if hint.
func checkReported(t *testing.T, r result, vf string, start time.Time, want []denial, hint bool) {
	t.Helper()
	var got []denial
	for _, v := range readViolations(t, vf) {
		got = append(got, denial{v.Op, v.Target, v.Errno, v.Tier})
		if v.Comm != "python3" || v.Pid <= 0 || v.Time.Before(start.Add(-time.Second)) || time.Since(v.Time) > time.Minute {
			t.Errorf("violation %+v: want comm python3, a pid > 0 and the time of the run", v)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("reported %q, want %q", got, want)
	}
	denied, rest := deniedLines(r.stderr)
	var lined []denial
	for _, d := range denied {
		lined = append(lined, denial{op: d[0], target: d[1]})
		if d[3] != "python3" {
			t.Errorf("denied line %q: want comm python3", d)
		}
	}
	var wantLines []denial
	for _, w := range want {
		if slices.Contains(quietTargets, w.target) {
			continue
		}
		if !slices.Contains(wantLines, denial{op: w.op, target: w.target}) {
			wantLines = append(wantLines, denial{op: w.op, target: w.target})
		}
	}
	if !slices.Equal(lined, wantLines) {
		t.Errorf("\"sbx: denied\" lines %q, want %q", lined, wantLines)
	}
	hints := 0
	for _, l := range rest {
		if strings.HasPrefix(l, "sbx:") && strings.Contains(l, "--write") {
			hints++
		}
	}
	if hint && hints != 1 || !hint && hints != 0 {
		t.Errorf("%d --write hint(s), want %v\n%s", hints, hint, r.stderr)
	}
}

// outsideFile creates a world-readable file with content under /var/tmp:
// outside the workspace, the home and /tmp (which the sandbox replaces with
// its own tmpfs), on the same filesystem as the workspace here.
func outsideFile(t *testing.T, content string) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "sbx-it-outside-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "secret")
	writeFile(t, p, content, 0o644)
	// In the as-user mode, the user's own file (which it may link).
	chownToUser(t, dir, p)
	return p
}

// TestFilesOutsideWorkspace: a host file outside the workspace (under
// /var/tmp, which the sandbox does not mount) cannot be reached inside by
// any alias: absolute path, a symlink in the workspace, a hardlink made
// from the workspace, /proc/self/root, /proc/1/root, the host's
// /proc/PID/fd; io_uring (which would bypass seccomp-checked syscalls) is
// refused. The host reads the file through each alias.
func TestFilesOutsideWorkspace(t *testing.T) {
	b, probe := probeBox(t)
	secret := outsideFile(t, "outside\n")
	dir := filepath.Dir(secret)
	link := filepath.Join(b.ws, "link")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	held, err := os.Open(secret)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	// The file through a process of the user's own: the test itself as
	// root; rootless, a sleep of the user's holding it as fd 3 (a user
	// cannot look into root's /proc/PID/fd and /proc/PID/root).
	holder, fd := os.Getpid(), int(held.Fd())
	if rootless() {
		fd = 3
		holder = b.hostProcess("exec 3<"+shellQuote(secret)+"; exec sleep 600", func(pid int) bool {
			l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/3", pid))
			return err == nil && l == secret && hasComm("sleep")(pid)
		})
	}
	byFd := fmt.Sprintf("/proc/%d/fd/%d", holder, fd)
	hl := filepath.Join(b.ws, "hardlink")
	args := []string{
		"read:" + secret, "read:" + link,
		"read:/proc/self/root" + secret, "read:/proc/1/root" + secret, "read:" + byFd,
		"link:" + secret + ":" + hl, "link:" + link + ":" + hl,
		"uring",
	}
	want := map[string]string{"uring": "EPERM@io_uring_setup"}
	for _, a := range args[:5] {
		want[a] = "ENOENT@open"
	}
	for _, a := range args[5:7] {
		want[a] = "ENOENT@link"
	}
	// The shim (PID 1) is not dumpable: its /proc entries are closed to
	// the program before any path below them is looked at.
	want["read:/proc/1/root"+secret] = "EACCES@open"
	// --write, so that EROFS cannot stand in for the link's refusal.
	r := b.run(append([]string{"--write", "--", python, probe}, args...)...)
	if r.code != 0 {
		t.Fatalf("probe in the sandbox\n%v", r)
	}
	in := probeResults(t, r, args)
	for _, a := range args {
		if in[a] != want[a] {
			t.Errorf("%s in the sandbox = %s, want %s", a, in[a], want[a])
		}
	}
	if _, err := os.Lstat(hl); err == nil {
		t.Errorf("%s exists on the host after the refused link", hl)
	}
	// The tools say the same.
	if r := b.run("--", "cat", secret); r.code != 1 || r.stdout != "" || r.stderr != "cat: "+secret+": No such file or directory\n" {
		t.Errorf("cat %s in the sandbox: want ENOENT\n%v", secret, r)
	}
	if r := b.run("--", "cat", "link"); r.code != 1 || r.stdout != "" || r.stderr != "cat: link: No such file or directory\n" {
		t.Errorf("cat link (-> %s) in the sandbox: want ENOENT\n%v", secret, r)
	}
	if r := b.run("--write", "--", "ln", secret, hl); r.code != 1 || r.stderr != "ln: failed to access '"+secret+"': No such file or directory\n" {
		t.Errorf("ln %s %s in the sandbox: want ENOENT\n%v", secret, hl, r)
	}
	// Shown read-only with --ro, the file still cannot be linked into the
	// writable workspace: another mount (EXDEV).
	roArgs := []string{"read:" + secret, "link:" + secret + ":" + hl}
	r = b.run(append([]string{"--write", "--ro", dir, "--", python, probe}, roArgs...)...)
	if ro := probeResults(t, r, roArgs); ro[roArgs[0]] != "OK" || ro[roArgs[1]] != "EXDEV@link" {
		t.Errorf("with --ro %s: read %s, link %s; want OK and EXDEV@link", dir, ro[roArgs[0]], ro[roArgs[1]])
	}

	// Control: on the host every alias reaches the file (the probe removes
	// the links it makes). The host's own PID 1 may be out of reach (here it
	// belongs to the machine's supervisor), so the /proc/PID/root alias is
	// taken through this test's process instead.
	hostArgs := slices.Clone(args)
	hostArgs[3] = fmt.Sprintf("read:/proc/%d/root%s", holder, secret)
	c := b.host(opts{}, python, append([]string{probe}, hostArgs...)...)
	out := probeResults(t, c, hostArgs)
	for _, a := range hostArgs {
		if out[a] != "OK" {
			t.Errorf("control: %s on the host = %s, want OK", a, out[a])
		}
	}
	if c := b.host(opts{}, "cat", "link"); c.code != 0 || c.stdout != "outside\n" {
		t.Errorf("control: cat link on the host\n%v", c)
	}
}

// TestFilesWorkspaceWrite: the workspace refuses writes with EROFS unless
// --write, and with --write they land on the host.
func TestFilesWorkspaceWrite(t *testing.T) {
	b, probe := probeBox(t)
	p := filepath.Join(b.ws, "new")
	if r := b.run("--", python, probe, "write:"+p); r.code != 0 || r.stdout != "write:"+p+" EROFS@open\n" {
		t.Errorf("write in the read-only workspace: want EROFS@open\n%v", r)
	}
	if r := b.run("--", "sh", "-c", "echo hi > new"); r.code != 2 || !strings.Contains(r.stderr, "sh: 1: cannot create new: Read-only file system\n") {
		t.Errorf("sh redirect in the read-only workspace: want EROFS\n%v", r)
	}
	if _, err := os.Lstat(p); err == nil {
		t.Fatalf("%s exists on the host after refused writes", p)
	}
	if r := b.run("--write", "--", "sh", "-c", "echo hi > new"); r.code != 0 || r.stderr != "" {
		t.Errorf("write with --write\n%v", r)
	}
	if data, err := os.ReadFile(p); err != nil || string(data) != "hi\n" {
		t.Errorf("with --write: host file %q, %v; want \"hi\\n\"", data, err)
	}
}

// TestPolicyLandlockCanary: Landlock is active inside: /.sbx/sbx (the shim,
// mounted read-only and world-readable, so that neither the mount nor the
// mode refuses it) cannot be opened (EACCES). --policy landlock runs,
// --policy bpf exits 125 naming BPF LSM where the kernel refuses it, and
// runs nothing.
func TestPolicyLandlockCanary(t *testing.T) {
	b := newBox(t)
	const check = `import os, stat
st = os.stat("/.sbx/sbx")
print("mode", oct(stat.S_IMODE(st.st_mode) & 0o555))
ro = [l.split()[5].split(",")[0] for l in open("/proc/self/mountinfo") if l.split()[4] in ("/.sbx", "/.sbx/sbx")]
print("mount", ro[-1] if ro else "none")
try:
    open("/.sbx/sbx", "rb").close()
    print("open OK")
except OSError as e:
    print("open", e.errno == 13 and "EACCES" or e)
`
	for _, policy := range []string{"auto", "landlock"} {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			b := b.in(t)
			r := b.run("--policy", policy, "--", python, "-c", check)
			own, denied, _ := splitReport(r.stderr)
			if r.code != 0 || r.stdout != "mode 0o555\nmount ro\nopen EACCES\n" || own != "" || !slices.Equal(denied, reported([]string{"open /.sbx/sbx python3"})) {
				t.Errorf("--policy %s: want /.sbx/sbx world-readable on a read-only mount, and EACCES (reported)\n%v", policy, r)
			}
			r = b.run("--policy", policy, "--", "cat", "/.sbx/sbx")
			own, denied, _ = splitReport(r.stderr)
			if r.code != 1 || own != "cat: /.sbx/sbx: Permission denied\n" || !slices.Equal(denied, reported([]string{"open /.sbx/sbx cat"})) {
				t.Errorf("--policy %s: cat /.sbx/sbx: want EACCES (reported)\n%v", policy, r)
			}
		})
	}
	t.Run("bpf", func(t *testing.T) {
		t.Parallel()
		b := b.in(t)
		lsmErr := lsm.Supported()
		r := b.run("--policy", "bpf", "--write", "--", "sh", "-c", "touch marker; echo ran")
		marker := filepath.Join(b.ws, "marker")
		if ok, _ := hasRootTier("bpf-lsm"); !ok {
			// Rootless: the BPF LSM needs root, and doctor says so.
			if want := "sbx: --policy bpf: " + runner.ErrBPFLSMNeedsRoot.Error() + "\n"; r.code != exitSbxError || r.stdout != "" || r.stderr != want {
				t.Errorf("--policy bpf rootless: want exit 125 and %q\n%v", want, r)
			}
			if _, err := os.Lstat(marker); err == nil {
				t.Errorf("--policy bpf exited %d but the program ran (marker written)", r.code)
			}
			return
		}
		if lsmErr == nil {
			t.Logf("this kernel runs BPF LSM programs: --policy bpf must work")
			if r.code != 0 || r.stdout != "ran\n" {
				t.Errorf("--policy bpf on a kernel with BPF LSM\n%v", r)
			}
			return
		}
		if r.code != exitSbxError || r.stdout != "" || !strings.HasPrefix(r.stderr, "sbx: --policy bpf: BPF LSM") || !strings.Contains(r.stderr, "EPERM") {
			t.Errorf("--policy bpf where BPF LSM is refused (%v): want exit 125 naming BPF LSM and EPERM\n%v", lsmErr, r)
		}
		if _, err := os.Lstat(marker); err == nil {
			t.Errorf("--policy bpf exited %d but the program ran (marker written)", r.code)
		}
	})
	// Control: the file behind /.sbx/sbx is readable on the host.
	if c := b.host(opts{}, "head", "-c", "4", sbxBin); c.code != 0 || c.stdout != "\x7fELF" {
		t.Errorf("control: reading %s on the host\n%v", sbxBin, c)
	}
}

// TestPolicyHostUnaffected: while a sandbox runs (and is denied), a host
// process opens the same file and makes the same connections.
func TestPolicyHostUnaffected(t *testing.T) {
	b, probe := probeBox(t)
	lb := newLoopback(t)
	secret := outsideFile(t, "host\n")
	args := []string{"read:" + secret, "tcp4:" + strconv.Itoa(lb.port4), "tcp6:" + strconv.Itoa(lb.port6), "udp4:" + strconv.Itoa(lb.uport4)}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	pcmd := python + " " + shellQuote(probe) + " " + strings.Join(quoted, " ")
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	p := b.start(opts{stdin: pr}, "run", "--", "sh", "-c", pcmd+"; echo ready; read x; "+pcmd)
	pr.Close()
	p.waitLine("ready")
	c := b.host(opts{}, python, append([]string{probe}, args...)...)
	out := probeResults(t, c, args)
	for _, a := range args {
		if out[a] != "OK" {
			t.Errorf("host %s while a sandbox runs = %s, want OK", a, out[a])
		}
	}
	if c := b.host(opts{}, "curl", "-sS", "-m", "10", lb.http4.URL+"/"); c.code != 0 || c.stdout != "ok\n" {
		t.Errorf("host curl while a sandbox runs\n%v", c)
	}
	pw.Close()
	r := p.wait()
	if r.code != 0 {
		t.Fatalf("sandbox\n%v", r)
	}
	// Inside, before and after the host's attempts: the file is absent and
	// the host's listeners are not in the sandbox's namespace (its own
	// loopback refuses TCP; the datagram goes to its own lo, never to the
	// host's listener: see datagrams below).
	in := lines(r.stdout)
	want := []string{"read:" + secret + " ENOENT@open", args[1] + " ECONNREFUSED@connect", args[2] + " ECONNREFUSED@connect", args[3] + " OK"}
	want = append(append(want, "ready"), want...)
	if !slices.Equal(in, want) {
		t.Errorf("inside: %q, want %q", in, want)
	}
	if !lb.waitConns(3) { // the probe's two, curl's one
		t.Errorf("the listeners saw %d connections, want 3 (all from the host)", lb.conns.Load())
	}
	if d := datagrams(lb.udp4); !slices.Equal(d, []string{"probe " + args[3]}) {
		t.Errorf("datagrams %q, want only the host's", d)
	}
}

// TestCanarySabotage: a test build that breaks the network wall or the
// Landlock policy on purpose exits 125 naming the protection, and the
// program never runs; without sabotage the same binary runs it.
func TestCanarySabotage(t *testing.T) {
	b := newBox(t)
	bin := testBin(t)
	for _, tc := range []struct {
		sabotage string
		mention  []string
	}{
		{"netwall", []string{"net canary", "network wall is not enforced"}},
		{"landlock", []string{"landlock", "canary /.sbx/sbx", "file policy is not enforced"}},
		{"", nil}, // control
	} {
		name := tc.sabotage
		if name == "" {
			name = "none"
		}
		t.Run(name, func(t *testing.T) {
			if tc.sabotage == "netwall" {
				needRootTier(t, "bpf-wall")
				// The sabotage's cgroup parent is the test's to remove
				// (sbx itself never makes one): rmdir fails, harmlessly,
				// while another run still uses it.
				t.Cleanup(func() {
					var dirs []string
					for _, pattern := range []string{"*/sbx-sabotaged/*", "sbx-sabotaged/*", "*/sbx-sabotaged", "sbx-sabotaged"} {
						m, _ := filepath.Glob(filepath.Join(cgroupRoot, pattern))
						dirs = append(dirs, m...)
					}
					for _, p := range dirs { // wall groups before their parents
						_ = unix.Rmdir(p) // cgroup files are not directories: ENOTDIR
					}
				})
			}
			t.Parallel()
			b := b.in(t)
			b.ws = b.tempDir()
			if err := os.Chmod(b.ws, 0o755); err != nil {
				t.Fatal(err)
			}
			p := b.startCmd(opts{env: []string{"SBX_TEST_SABOTAGE=" + tc.sabotage}}, bin, "run", "--write", "--", "sh", "-c", "touch marker; echo ran")
			p.sbxRun = true
			r := p.wait()
			for _, id := range r.ids {
				// The netwall sabotage moves the run's cgroups aside.
				if cg := sandboxCgroups(sandbox.CgroupParent+"-sabotaged", id); len(cg) > 0 {
					t.Errorf("sandbox %s left behind: %s", id, strings.Join(cg, ", "))
				}
			}
			_, err := os.Lstat(filepath.Join(b.ws, "marker"))
			if tc.sabotage == "" {
				if r.code != 0 || r.stdout != "ran\n" || err != nil {
					t.Errorf("control: the sbxtest build without sabotage must run the program\n%v\nmarker: %v", r, err)
				}
				return
			}
			if r.code != exitSbxError || r.stdout != "" || !strings.HasPrefix(r.stderr, "sbx: refusing to run: ") {
				t.Errorf("sabotaged %s: want exit 125, \"sbx: refusing to run: ...\" and no output\n%v", tc.sabotage, r)
			}
			for _, m := range tc.mention {
				if !strings.Contains(r.stderr, m) {
					t.Errorf("sabotaged %s: stderr does not mention %q\n%v", tc.sabotage, m, r)
				}
			}
			if err == nil {
				t.Errorf("sabotaged %s: the program ran (marker written)", tc.sabotage)
			}
		})
	}
}

// TestDoctorCanaryRun: doctor's verdict is that of a real run. With the
// Landlock policy sabotaged (its canary then fails), the probes still all
// pass, but doctor must report the failed canary run and exit 1, never
// "can enforce"; the same build without sabotage says ok.
func TestDoctorCanaryRun(t *testing.T) {
	b := newBox(t)
	if rootless() {
		t.Skip("the sabotaged build is exercised as root (the rootless canary run is TestRootlessDoctor's)")
	}
	bin := testBin(t)
	for _, sabotage := range []string{"landlock", ""} {
		p := b.startCmd(opts{env: []string{"SBX_TEST_SABOTAGE=" + sabotage}}, bin, "doctor")
		r := p.wait()
		if sabotage == "" {
			if r.code != 0 || !strings.Contains(r.stdout, "canary run:    ok") || !strings.Contains(r.stdout, "verdict:       sbx run can enforce") {
				t.Errorf("control: doctor must pass its canary run\n%v", r)
			}
			continue
		}
		if r.code != 1 || !strings.Contains(r.stdout, "canary run:    failed") || !strings.Contains(r.stdout, "file policy is not enforced") {
			t.Errorf("sabotaged landlock: want exit 1 and the failed canary run with its reason\n%v", r)
		}
		if strings.Contains(r.stdout, "can enforce") {
			t.Errorf("sabotaged landlock: doctor claims sbx can enforce\n%v", r)
		}
	}
}

// doctorLine is one "NAME  STATE  DETAIL" line of sbx doctor.
var doctorLine = regexp.MustCompile(`^(\S+(?: \S+)*)\s{2,}(ok|missing)\b\s*(.*)$`)

// TestDoctorReport: sbx doctor says, for this host, that Landlock (with its
// ABI, checked against the kernel), cgroup BPF and the denial tracer are
// available, BPF LSM is not and why (EPERM at load), and exits 0 since
// files and network can be enforced.
func TestDoctorReport(t *testing.T) {
	b := newBox(t)
	r := b.sbx(opts{}, "doctor")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("sbx doctor: want exit 0\n%v", r)
	}
	state, detail := map[string]string{}, map[string]string{}
	for _, l := range lines(r.stdout) {
		if m := doctorLine.FindStringSubmatch(l); m != nil {
			state[m[1]], detail[m[1]] = m[2], m[3]
		}
	}
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, 1) // LANDLOCK_CREATE_RULESET_VERSION
	if errno != 0 {
		t.Fatalf("landlock_create_ruleset(VERSION): %v: this host should have Landlock", errno)
	}
	if state["landlock"] != "ok" || detail["landlock"] != fmt.Sprintf("ABI %d", abi) {
		t.Errorf("landlock: %s %q, want ok \"ABI %d\"\n%s", state["landlock"], detail["landlock"], abi, r.stdout)
	}
	if rootless() {
		// The user's doctor: the BPF tiers need root, and it says why;
		// Landlock and seccomp are enough to run.
		for name, want := range map[string]error{"cgroup bpf": runner.ErrCgroupBPFNeedsRoot, "bpf lsm": runner.ErrBPFLSMNeedsRoot, "denial tracer": runner.ErrCgroupBPFNeedsRoot} {
			if state[name] != "missing" || detail[name] != want.Error() {
				t.Errorf("%s: %s %q, want missing %q\n%s", name, state[name], detail[name], want, r.stdout)
			}
		}
		for _, want := range []string{"mode:          rootless (user namespace)", "file tiers:    landlock", "network tiers: empty network namespace, seccomp socket filter, landlock tcp bind/connect", "verdict:       sbx run can enforce files and network here"} {
			if !slices.Contains(lines(r.stdout), want) {
				t.Errorf("doctor output lacks %q\n%s", want, r.stdout)
			}
		}
		return
	}
	if state["cgroup bpf"] != "ok" {
		t.Errorf("cgroup bpf: %s %q, want ok\n%s", state["cgroup bpf"], detail["cgroup bpf"], r.stdout)
	}
	lsmErr := lsm.Supported()
	switch {
	case lsmErr == nil:
		if state["bpf lsm"] != "ok" {
			t.Errorf("bpf lsm works here but doctor says %s %q", state["bpf lsm"], detail["bpf lsm"])
		}
	case errors.Is(lsmErr, lsm.ErrRefused):
		if state["bpf lsm"] != "missing" || !strings.Contains(detail["bpf lsm"], "EPERM") {
			t.Errorf("bpf lsm: %s %q, want missing with the reason (EPERM)\n%s", state["bpf lsm"], detail["bpf lsm"], r.stdout)
		}
	default:
		t.Logf("bpf lsm unavailable for another reason: %v", lsmErr)
		if state["bpf lsm"] != "missing" {
			t.Errorf("bpf lsm: %s, want missing", state["bpf lsm"])
		}
	}
	// The denial tracer only reports: its line says whether it works, and
	// why not, and never changes the verdict.
	if trErr := tracer.Supported(); trErr == nil {
		if state["denial tracer"] != "ok" {
			t.Errorf("the denial tracer works here but doctor says %s %q", state["denial tracer"], detail["denial tracer"])
		}
	} else if state["denial tracer"] != "missing" || !strings.Contains(detail["denial tracer"], "not reported") {
		t.Errorf("denial tracer: %s %q, want missing, saying what is not reported (%v)", state["denial tracer"], detail["denial tracer"], trErr)
	}
	for _, want := range []string{"file tiers:    landlock", "verdict:       sbx run can enforce files and network here"} {
		if !strings.Contains(r.stdout, "canary run:    ok: ") {
			t.Errorf("doctor output lacks its canary run's verdict\n%s", r.stdout)
		}
		if lsmErr == nil && strings.HasPrefix(want, "file tiers") {
			want = "file tiers:    bpf lsm, landlock"
		}
		if !slices.Contains(lines(r.stdout), want) {
			t.Errorf("doctor output lacks %q\n%s", want, r.stdout)
		}
	}
}
