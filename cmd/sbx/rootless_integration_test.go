package main

// Rootless: sbx run and sbx exec by an ordinary user. The tests run as
// root only to create the test user (useradd, idempotent) and hand it a
// copy of the binary and a workspace; every sbx process then runs with the
// user's ids and nothing of root (no capabilities, no sudo variables).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// rootlessUser is the test user, created by the tests' setup.
const rootlessUser = "sbx-rootless-test"

var (
	rootlessOnce sync.Once
	rootlessErr  error
	// rootlessAcct is the test user and its copy of the binary.
	rootlessAcct testUser
)

// setupRootless creates the test user (once, idempotent) and a copy of the
// binary it can execute (see ensureTestUser, shared with the as-user mode).
func setupRootless(t *testing.T) {
	t.Helper()
	requireRoot(t) // only to create the user: the runs are rootless
	rootlessOnce.Do(func() { rootlessAcct, rootlessErr = ensureTestUser(rootlessUser) })
	if rootlessErr != nil {
		t.Fatalf("set up the rootless test user: %v", rootlessErr)
	}
}

// newRootlessBox is one rootless test's world: a box whose processes run as
// the test user (newUserBox), with a workspace, a data home and a runtime
// dir of its own (its state dir lies there).
func newRootlessBox(t *testing.T) *box {
	t.Helper()
	setupRootless(t)
	t.Parallel()
	return newUserBox(t, &rootlessAcct)
}

func TestRootlessExitCodes(t *testing.T) {
	b := newRootlessBox(t)
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"true", []string{"true"}, 0},
		{"exit 7", []string{"sh", "-c", "exit 7"}, 7},
		{"signal", []string{"sh", "-c", "kill -TERM $$"}, 128 + 15},
		{"not found", []string{"no-such-command-sbx"}, 127},
		{"not executable", []string{"/etc/hostname"}, 126},
	} {
		r := b.run(append([]string{"--"}, tc.args...)...)
		if r.code != tc.want {
			t.Errorf("%s: got %v, want exit %d", tc.name, r, tc.want)
		}
	}
	if r := b.run("--no-such-flag", "--", "true"); r.code != exitSbxError {
		t.Errorf("bad flag: got %v, want 125", r)
	}
}

// The program is the user on the host (files it writes are the user's),
// without any capability, and the state dir is the user's runtime dir.
func TestRootlessIdentity(t *testing.T) {
	b := newRootlessBox(t)
	r := b.run("-w", "--", "sh", "-c", "grep -E '^Cap(Eff|Prm|Bnd|Amb)' /proc/self/status; touch made-inside")
	if r.code != 0 {
		t.Fatalf("got %v", r)
	}
	for _, l := range lines(r.stdout) {
		if !strings.HasSuffix(l, "0000000000000000") {
			t.Errorf("capability set not empty: %q", l)
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(b.ws, "made-inside"), &st); err != nil {
		t.Fatal(err)
	}
	if int(st.Uid) != rootlessAcct.uid || int(st.Gid) != rootlessAcct.gid {
		t.Errorf("file written inside owned by %d:%d on the host, want the user's %d:%d", st.Uid, st.Gid, rootlessAcct.uid, rootlessAcct.gid)
	}
	if _, err := os.Stat(filepath.Join(b.stateDir(), "run")); err != nil {
		t.Errorf("state not kept under $XDG_RUNTIME_DIR/sbx: %v", err)
	}
}

func TestRootlessReadOnly(t *testing.T) {
	b := newRootlessBox(t)
	touch := func(p string) []string {
		return []string{"--", "sh", "-c", "touch " + shellQuote(p) + " && echo ok"}
	}
	for _, p := range []string{"/usr/sbx-rootless", "/etc/sbx-rootless", filepath.Join(b.ws, "f")} {
		r := b.run(touch(p)...)
		if r.code == 0 || !strings.Contains(r.stderr, "Read-only file system") {
			t.Errorf("touch %s: got %v, want EROFS", p, r)
		}
	}
	if r := b.run(append([]string{"--write"}, touch(filepath.Join(b.ws, "f"))...)...); r.code != 0 || r.stdout != "ok\n" {
		t.Errorf("touch in the workspace with --write: got %v", r)
	}
	if r := b.run(touch("/tmp/f")...); r.code != 0 {
		t.Errorf("touch /tmp/f: got %v", r)
	}
	if r := b.run("--", "sh", "-c", `touch "$HOME/f"`); r.code != 0 {
		t.Errorf("touch $HOME/f: got %v", r)
	}
}

// The user's real home and /root are not there; the sandbox home is.
func TestRootlessHostHomeInvisible(t *testing.T) {
	b := newRootlessBox(t)
	secret := filepath.Join(rootlessAcct.home, uniqueName(t, "secret"))
	writeFile(t, secret, "x", 0o600)
	if err := os.Chown(secret, rootlessAcct.uid, rootlessAcct.gid); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(secret) })
	if r := b.host(opts{}, "cat", secret); r.code != 0 || r.stdout != "x" {
		t.Fatalf("control: the user cannot read its own file on the host: %v", r)
	}
	r := b.run("--", "cat", secret)
	if r.code == 0 || !strings.Contains(r.stderr, "No such file or directory") {
		t.Errorf("host home file readable inside: %v", r)
	}
	if r := b.run("--", "ls", "/root", "/run", "/var"); r.code == 0 {
		t.Errorf("/root, /run, /var visible: %v", r)
	}
}

// Network: under --net none no inet socket at all (seccomp, EPERM); under
// --net loopback (the default) inet sockets work in the sandbox's own
// namespace, whose loopback is not the host's: a listener on the host's
// loopback that the user reaches outside cannot be reached inside either.
func TestRootlessNetworkDenied(t *testing.T) {
	b := newRootlessBox(t)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hello\n"))
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	script := fmt.Sprintf(`use Socket; use Errno;
for my $f ([PF_INET, "inet"], [PF_INET6, "inet6"], [PF_NETLINK, "netlink"], [PF_PACKET, "packet"]) {
  if (socket(my $s, $f->[0], SOCK_STREAM, 0)) { print "$f->[1] socket ok\n"; close $s } else { printf "%%s socket errno %%d\n", $f->[1], $!+0 }
}
socket(my $s, PF_INET, SOCK_STREAM, 0) or exit 3;
connect($s, pack_sockaddr_in(%d, inet_aton("127.0.0.1"))) or die "connect: $!\n";
print "connected: ", scalar <$s>;`, port)
	if r := b.host(opts{}, "perl", "-e", script); !strings.Contains(r.stdout, "connected: hello") {
		t.Fatalf("control: the user cannot reach the host listener outside: %v", r)
	}
	r := b.run("--net", "none", "--", "perl", "-e", script)
	want := fmt.Sprintf("inet socket errno %d\ninet6 socket errno %d\nnetlink socket errno %d\npacket socket errno %d\n", syscall.EPERM, syscall.EPERM, syscall.EPERM, syscall.EPERM)
	if r.code != 3 || r.stdout != want {
		t.Errorf("--net none: got %v, want exit 3 and\n%s", r, want)
	}
	// (Perl's Socket exports no PF_NETLINK: that line asks for family 0,
	// refused by seccomp; NETLINK_ROUTE itself: TestNetLoopback.)
	r = b.run("--", "perl", "-e", script)
	want = fmt.Sprintf("inet socket ok\ninet6 socket ok\nnetlink socket errno %d\npacket socket errno %d\n", syscall.EPERM, syscall.EPERM)
	if r.code == 0 || r.stdout != want || !strings.Contains(r.stderr, "connect: Connection refused") {
		t.Errorf("--net loopback: got %v, want\n%sand the host's listener refused", r, want)
	}
	// AF_UNIX still works.
	if r := b.run("--", "perl", "-e", `use Socket; socketpair(my $a, my $b, AF_UNIX, SOCK_STREAM, 0) or die "$!\n"; print "ok\n"`); r.stdout != "ok\n" {
		t.Errorf("AF_UNIX socketpair: %v", r)
	}
}

// TestRootlessEgress: without root, --allow-host 127.0.0.1:PORT reaches
// the host's listener at that same address from inside, for clients that
// honour the proxy variables and for those that do not (curl, Python's
// urllib, a raw TCP client, all without any proxy variable), through the
// forwarder sbx's helper opened in the sandbox's namespace; another port
// stays unreachable; a name gets NXDOMAIN at once, reported; --net host
// shares the host's network. The host listener answers the user outside
// (the control), and the same run without --allow-host does not reach it.
func TestRootlessEgress(t *testing.T) {
	b := newRootlessBox(t)
	up := newUpstream(t)
	other := newUpstream(t)
	url := "http://127.0.0.1:" + up.port
	if r := b.host(opts{}, "curl", "-sS", url+"/control"); r.stdout != "upstream /control" {
		t.Fatalf("control: the user cannot reach the host listener outside: %v", r)
	}
	noProxy := noProxyEnv
	script := "curl -sS --max-time 10 " + url + "/proxy; echo; " +
		noProxy + "curl -sS --max-time 10 " + url + "/direct; echo; " +
		noProxy + python + ` -c "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('` + url + `/urllib').read().decode())"; echo; ` +
		noProxy + rawGet("127.0.0.1", up.port, "/raw") + "; " +
		noProxy + "curl -sS --max-time 10 http://127.0.0.1:" + other.port + "/ 2>&1 | sed 's/ after .*//'"
	r := b.run("--allow-host", "127.0.0.1:"+up.port, "--", "sh", "-c", script)
	want := "upstream /proxy\nupstream /direct\nupstream /urllib\nupstream /raw\n" +
		"curl: (7) Failed to connect to 127.0.0.1 port " + other.port + "\n"
	if r.code != 0 || r.stdout != want {
		t.Fatalf("want %q\n%v", want, r)
	}
	if up.hits.Load() != 5 || other.hits.Load() != 0 {
		t.Errorf("upstream hits %d (want 5: the control and four runs), other port %d (want 0)", up.hits.Load(), other.hits.Load())
	}
	if c := b.run("--", "curl", "-sS", "--max-time", "5", url+"/none"); c.code == 0 || up.hits.Load() != 5 {
		t.Errorf("control: without --allow-host the host listener must be unreachable\n%v", c)
	}

	r = b.run("--", "sh", "-c", python+` -c "
import socket, time
t = time.time()
try:
    socket.getaddrinfo('example.com', 443)
    print('resolved')
except socket.gaierror as e:
    print(e.errno, 'fast' if time.time() - t < 1 else 'slow')"`)
	if r.code != 0 || r.stdout != "-2 fast\n" || !strings.Contains(r.stderr, "sbx: denied resolve example.com (no DNS in the sandbox)\n") {
		t.Errorf("a name: want NXDOMAIN (EAI_NONAME, -2) at once, and reported\n%v", r)
	}

	// An allowed address beyond loopback (TEST-NET-2: nothing answers
	// there, so only sbx's forwarder can accept) is put on the
	// sandbox's lo with sbx's listener; without the rule the same
	// connect has no route (the control).
	connect := python + ` -c "
import socket
try:
    socket.create_connection(('198.51.100.7', 9), timeout=5); print('accepted')
except OSError as e:
    print(e.errno)"`
	r = b.run("--allow-host", "198.51.100.7:9", "--", "sh", "-c", "ip -o addr show lo | grep -c 198.51.100.7/32; "+connect)
	if r.stdout != "1\naccepted\n" {
		t.Errorf("an allowed address beyond loopback: want it on lo and sbx's forwarder accepting\n%v", r)
	}
	if c := b.run("--", "sh", "-c", connect); c.stdout != fmt.Sprintf("%d\n", syscall.ENETUNREACH) {
		t.Errorf("control: without the rule, want ENETUNREACH\n%v", c)
	}

	r = b.run("--net", "host", "--", "curl", "-sS", "--max-time", "10", url+"/host")
	if r.code != 0 || r.stdout != "upstream /host" || !strings.Contains(r.stderr, "sbx: WARNING: --net host") {
		t.Errorf("--net host: want the host's listener reachable, and announced\n%v", r)
	}
}

// Landlock: the sbx binary is bind-mounted in the sandbox (for its PID 1)
// but outside the file policy: the program cannot read it, though the same
// user reads it outside, and though the mount itself is readable.
func TestRootlessLandlockDenies(t *testing.T) {
	b := newRootlessBox(t)
	if r := b.host(opts{}, "head", "-c", "4", rootlessAcct.bin); r.code != 0 || r.stdout != "\x7fELF" {
		t.Fatalf("control: the user cannot read the binary outside: %v", r)
	}
	r := b.run("--", "head", "-c", "4", "/.sbx/sbx")
	if r.code == 0 || !strings.Contains(r.stderr, "Permission denied") {
		t.Errorf("read of a file outside the Landlock policy: got %v, want EACCES", r)
	}
}

// Without a delegated cgroup (this host: hybrid v1), the default limits
// become rlimits, with one note; explicit limits refuse to run.
func TestRootlessLimits(t *testing.T) {
	b := newRootlessBox(t)
	// The note is said once per host (here: per state dir, the box's
	// own) until its reason changes: once, then not again.
	r := b.run("--", "grep", "-E", "^Max (processes|data size|address space)", "/proc/self/limits")
	if r.code != 0 {
		t.Fatalf("got %v", r)
	}
	got := strings.Join(strings.Fields(r.stdout), " ")
	if want := fmt.Sprintf("Max data size %d %d bytes Max processes %d %d processes Max address space unlimited unlimited bytes", hostMemory(), hostMemory(), runDefaultPids, runDefaultPids); got != want {
		t.Errorf("rlimits inside: got %q, want %q", r.stdout, want)
	}
	if n := strings.Count(r.stderr, "sbx: note: limits are rlimits, weaker than cgroups"); n != 1 || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("want the rlimit note once on stderr, in one line, got %d times: %q", n, r.stderr)
	}
	if r := b.run("--", "true"); r.code != 0 || strings.Contains(r.stderr, "rlimits") {
		t.Errorf("second run: want no rlimit note, got %v", r)
	}
	checkWasmSurvives(t, b.run)
	// The pid limit holds: past it a process cannot be forked. The
	// default (4096) is too many processes to start on a test host, so
	// the program lowers its own soft limit below what it runs, which
	// RLIMIT_NPROC enforces all the same.
	r = b.run("--", "bash", "-c", "ulimit -S -u 64; for i in $(seq 100); do sleep 3 & done; wait; echo done")
	if !strings.Contains(r.stderr, "fork") {
		t.Errorf("100 processes under a soft limit of 64: got %v, want a failed fork", r)
	}
	for _, flag := range []string{"--memory=1g", "--cpus=2", "--pids=64"} {
		r := b.run(flag, "--", "true")
		name, _, _ := strings.Cut(flag, "=")
		if r.code != exitSbxError || !strings.Contains(r.stderr, name+": cannot enforce as cgroup limits without root") || !strings.Contains(r.stderr, "fix:") {
			t.Errorf("%s without delegation: got %v, want 125 naming the fix", flag, r)
		}
	}
}

// sbx exec: the JSON tool works rootless too.
func TestRootlessExec(t *testing.T) {
	b := newRootlessBox(t)
	writeFile(t, filepath.Join(b.ws, "in.txt"), "data\n", 0o644)
	req, _ := json.Marshal(map[string]any{"command": []string{"cat", "in.txt"}, "workspace": b.ws})
	r := b.sbx(opts{stdin: bytes.NewReader(req)}, "exec")
	var res struct {
		Status   string `json:"status"`
		ExitCode *int   `json:"exitCode"`
		Output   string `json:"output"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatalf("result: %v\n%v", err, r)
	}
	if res.ExitCode == nil || *res.ExitCode != 0 || !strings.Contains(res.Output, "data") {
		t.Errorf("exec: got %+v\n%v", res, r)
	}
}

// doctor as the user names the rootless tiers and why the BPF ones are out.
func TestRootlessDoctor(t *testing.T) {
	b := newRootlessBox(t)
	r := b.sbx(opts{}, "doctor")
	for _, want := range []string{"cgroup BPF needs root", "BPF LSM needs root", "mode:          rootless", "file tiers:    landlock", "seccomp socket filter", "landlock tcp bind/connect", "limits:        rlimits"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, r.stdout)
		}
	}
	if r.code != 0 {
		t.Errorf("doctor: exit %d, want 0 (Landlock and user namespaces are there)\n%s", r.code, r.stdout)
	}
	p := b.sbx(opts{}, "doctor", "--apparmor-profile")
	if !strings.Contains(p.stdout, "profile sbx "+rootlessAcct.bin+" flags=(unconfined)") || !strings.Contains(p.stdout, "userns,") {
		t.Errorf("apparmor profile: %v", p)
	}
}

// start starts sbx as the test user with its stdout on a pipe, and returns
// it once the program has printed "ready".
func (b *box) startReady(args ...string) (*exec.Cmd, *bytes.Buffer, context.CancelFunc) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	c := b.command(ctx, opts{}, rootlessAcct.bin, args...)
	r, w, err := os.Pipe()
	if err != nil {
		b.t.Fatal(err)
	}
	var errb bytes.Buffer
	c.Stdout, c.Stderr = w, &errb
	if err := c.Start(); err != nil {
		b.t.Fatal(err)
	}
	w.Close()
	line := make([]byte, 6)
	if _, err := r.Read(line); err != nil || string(line) != "ready\n" {
		b.t.Fatalf("no ready line: %q %v, stderr %q", line, err, errb.String())
	}
	go func() { _, _ = bytes.NewBuffer(nil).ReadFrom(r); r.Close() }()
	return c, &errb, cancel
}

func TestRootlessSignalsAndTimeout(t *testing.T) {
	b := newRootlessBox(t)
	if r := b.run("--timeout", "500ms", "--", "sleep", "30"); r.code != 124 || !strings.Contains(r.stderr, "timed out") {
		t.Errorf("timeout: got %v, want 124", r)
	}
	c, errb, cancel := b.startReady("run", "--", "sh", "-c", `trap 'echo got-term >&2; exit 3' TERM; echo ready; while :; do sleep 0.1; done`)
	defer cancel()
	if err := c.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := c.Wait()
	if code := exitCode(err); code != 3 || !strings.Contains(errb.String(), "got-term") {
		t.Errorf("SIGTERM forwarded: exit %d, stderr %q; want 3 and got-term", code, errb.String())
	}
	b.assertClean()
}

// SIGKILL of sbx takes the whole sandbox with it (the shim's lifeline),
// and the next run reclaims the state the killed one left.
func TestRootlessSIGKILLNoOrphans(t *testing.T) {
	b := newRootlessBox(t)
	c, _, cancel := b.startReady("run", "--", "sh", "-c", "sleep 300 & echo ready; wait")
	defer cancel()
	alive := func() bool {
		procs, _ := filepath.Glob("/proc/[0-9]*/cwd")
		for _, p := range procs {
			if cwd, err := os.Readlink(p); err == nil && cwd == b.ws {
				return true
			}
		}
		return false
	}
	if !alive() {
		t.Fatal("cannot see the sandbox's processes by their cwd: the check below would prove nothing")
	}
	if err := c.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if !alive() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("sandbox processes outlived a SIGKILLed sbx by 10s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	r := b.run("--", "true") // reclaims, then checks the state dir is clean
	if r.code != 0 || !strings.Contains(r.stderr, "cleaned up 1 sandbox(es)") {
		t.Errorf("next run: got %v, want it to reclaim the killed run", r)
	}
}

// The pty path, under script(1) as the user.
func TestRootlessTerminal(t *testing.T) {
	b := newRootlessBox(t)
	r := b.sbxVia("script", "-qec", rootlessAcct.bin+" run -- sh -c 'tty; test -t 0 && echo is-a-tty'", "/dev/null")
	if r.code != 0 || !strings.Contains(r.stdout, "/dev/pts/0") || !strings.Contains(r.stdout, "is-a-tty") {
		t.Errorf("under script: got %v", r)
	}
}

// sbxVia runs a wrapper (script) around sbx as the test user.
func (b *box) sbxVia(name string, args ...string) result {
	b.t.Helper()
	r := b.host(opts{}, name, args...)
	b.assertClean()
	return r
}
