package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestProcShowsOnlySandbox: /proc lists the sandbox's own few processes
// (the shim as PID 1), never a host process.
func TestProcShowsOnlySandbox(t *testing.T) {
	b := newBox(t)
	self := strconv.Itoa(os.Getpid())
	numeric := func(out string) []string {
		var pids []string
		for _, e := range lines(out) {
			if _, err := strconv.Atoi(e); err == nil {
				pids = append(pids, e)
			}
		}
		return pids
	}
	r := b.run("--", "ls", "/proc")
	pids := numeric(r.stdout)
	if r.code != 0 || !slices.Contains(pids, "1") || len(pids) > 4 || slices.Contains(pids, self) {
		t.Errorf("sandbox /proc pids = %q: want PID 1 and at most a few, not the test's pid %s\n%v", pids, self, r)
	}
	c := b.host(opts{}, "ls", "/proc")
	if hp := numeric(c.stdout); !slices.Contains(hp, self) || len(hp) <= 4 {
		t.Errorf("control: host /proc pids = %q: want many, including %s", hp, self)
	}
}

// TestSignalHostProcess: a host process cannot be signalled (it is not
// visible: ESRCH), while the same kill works on the host. The target is a
// process of the same user: the test itself as root, a sleep of the user's
// in the as-user mode.
func TestSignalHostProcess(t *testing.T) {
	b := newBox(t)
	pid := strconv.Itoa(b.hostProcess("exec sleep 600", hasComm("sleep")))
	// What the shell says for a pid that does not exist (dash adds an
	// empty line).
	esrch := b.host(opts{}, "sh", "-c", "kill -0 2147483646").stderr
	if !strings.Contains(esrch, "No such process") {
		t.Fatalf("control: kill of a missing pid on the host says %q", esrch)
	}
	for _, sig := range []string{"0", "TERM", "KILL"} {
		cmd := "kill -" + sig + " " + pid
		if r := b.run("--", "sh", "-c", cmd); r.code != 1 || r.stderr != esrch {
			t.Errorf("%s in the sandbox: want ESRCH (%q)\n%v", cmd, esrch, r)
		}
	}
	if c := b.host(opts{}, "sh", "-c", "kill -0 "+pid); c.code != 0 {
		t.Errorf("control: kill -0 %s on the host\n%v", pid, c)
	}
	// Signals within the sandbox work.
	if r := b.run("--", "sh", "-c", "sleep 5 & kill -TERM $! && wait $!; echo $?"); r.code != 0 || r.stdout != "143\n" {
		t.Errorf("kill of the program's own child in the sandbox\n%v", r)
	}
}

// TestNamespaces: mount, PID, IPC, UTS, network and cgroup namespaces are
// new; the network has loopback only.
func TestNamespaces(t *testing.T) {
	b := newBox(t)
	kinds := []string{"mnt", "pid", "ipc", "uts", "net", "cgroup"}
	var args []string
	for _, k := range kinds {
		args = append(args, "/proc/self/ns/"+k)
	}
	r := b.run(append([]string{"--", "readlink"}, args...)...)
	c := b.host(opts{}, "readlink", args...)
	in, out := lines(r.stdout), lines(c.stdout)
	if r.code != 0 || c.code != 0 || len(in) != len(kinds) || len(out) != len(kinds) {
		t.Fatalf("readlink namespaces: sandbox\n%v\nhost\n%v", r, c)
	}
	for i, k := range kinds {
		if in[i] == out[i] {
			t.Errorf("%s namespace is the host's (%s)", k, in[i])
		}
	}
	if r := b.run("--", "hostname"); r.code != 0 || r.stdout != "sbx\n" {
		t.Errorf("hostname in the sandbox: want sbx\n%v", r)
	}
	ifaces := func(procNetDev string) []string {
		var names []string
		for _, l := range lines(procNetDev) {
			if name, _, ok := strings.Cut(l, ":"); ok && !strings.Contains(name, "|") {
				names = append(names, strings.TrimSpace(name))
			}
		}
		return names
	}
	r = b.run("--", "cat", "/proc/net/dev")
	if got := ifaces(r.stdout); r.code != 0 || !slices.Equal(got, []string{"lo"}) {
		t.Errorf("sandbox network interfaces = %q, want [lo]\n%v", got, r)
	}
	c = b.host(opts{}, "cat", "/proc/net/dev")
	t.Logf("host network interfaces: %q", ifaces(c.stdout))
}

// TestNoPrivileges: the program runs as the invoking user (root here) with
// no capabilities, no_new_privs and a seccomp filter, unlike the host.
func TestNoPrivileges(t *testing.T) {
	b := newBox(t)
	status := func(out string) map[string]string {
		m := map[string]string{}
		for _, l := range lines(out) {
			if k, v, ok := strings.Cut(l, ":"); ok {
				m[k] = strings.TrimSpace(v)
			}
		}
		return m
	}
	r := b.run("--", "cat", "/proc/self/status")
	in := status(r.stdout)
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
		if in[k] != "0000000000000000" {
			t.Errorf("sandbox %s = %q, want none", k, in[k])
		}
	}
	if in["NoNewPrivs"] != "1" || in["Seccomp"] != "2" {
		t.Errorf("sandbox NoNewPrivs = %q, Seccomp = %q; want 1 and 2 (filter)", in["NoNewPrivs"], in["Seccomp"])
	}
	if rootless() {
		// The user's own uid, in a user namespace of the program's that
		// maps it to the sandbox namespace's 0 (the user) alone, under
		// two seccomp filters (the shim's and the program's).
		m := b.run("--", "cat", "/proc/self/uid_map")
		u := strconv.Itoa(hostUID())
		if !slices.Equal(strings.Fields(in["Uid"]), []string{u, u, u, u}) || !slices.Equal(strings.Fields(m.stdout), []string{u, "0", "1"}) {
			t.Errorf("sandbox Uid = %q, uid_map %q: want %s, mapped to the sandbox namespace's 0 alone", in["Uid"], m.stdout, u)
		}
		if in["Seccomp_filters"] != "2" {
			t.Errorf("sandbox Seccomp_filters = %q, want 2", in["Seccomp_filters"])
		}
		// The shim held two capabilities to start the program in that
		// namespace; every thread of it has dropped them before the
		// program's first instruction.
		sh := b.run("--", "sh", "-c", `for t in /proc/1/task/*; do grep -E '^Cap(Prm|Eff|Bnd|Amb)' $t/status; done`)
		if sh.code != 0 || len(lines(sh.stdout)) < 4 {
			t.Fatalf("read the shim's capabilities: %v", sh)
		}
		for _, l := range lines(sh.stdout) {
			if !strings.HasSuffix(l, "0000000000000000") {
				t.Errorf("shim thread still holds capabilities: %q", l)
			}
		}
	} else if in["Uid"] == "" || strings.Fields(in["Uid"])[0] != strconv.Itoa(os.Getuid()) {
		t.Errorf("sandbox Uid = %q, want the invoking user's %d", in["Uid"], os.Getuid())
	}
	// Control: root on the host, or the user as uid 0 of a user
	// namespace of its own (as the sandbox's shim is), has capabilities.
	host := status(b.hostPrivileged(opts{}, "", "cat", "/proc/self/status").stdout)
	if host["CapEff"] == "0000000000000000" || host["NoNewPrivs"] != "0" {
		t.Errorf("control: host CapEff = %q, NoNewPrivs = %q: want capabilities and no no_new_privs", host["CapEff"], host["NoNewPrivs"])
	}
}

// hasComm returns a readiness check of hostProcess: the process runs comm.
func hasComm(comm string) func(pid int) bool {
	return func(pid int) bool {
		c, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		return err == nil && strings.TrimSpace(string(c)) == comm
	}
}

// TestMinimalDev: /dev holds the standard devices only.
func TestMinimalDev(t *testing.T) {
	b := newBox(t)
	allowed := []string{"console", "core", "fd", "full", "mqueue", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin", "stdout", "tty", "urandom", "zero"}
	required := []string{"full", "null", "pts", "random", "shm", "tty", "urandom", "zero"}
	r := b.run("--", "ls", "-A", "/dev")
	got := lines(r.stdout)
	for _, d := range got {
		if !slices.Contains(allowed, d) {
			t.Errorf("unexpected /dev/%s in the sandbox", d)
		}
	}
	for _, d := range required {
		if !slices.Contains(got, d) {
			t.Errorf("/dev/%s missing in the sandbox", d)
		}
	}
	if r := b.run("--", "sh", "-c", "echo x > /dev/null && head -c 4 /dev/zero | od -An -tx1 && head -c 16 /dev/urandom | wc -c"); r.code != 0 || r.stdout != " 00 00 00 00\n16\n" {
		t.Errorf("/dev/null, /dev/zero, /dev/urandom in the sandbox\n%v", r)
	}
	// Control: the host has devices the sandbox does not.
	var extra []string
	for _, d := range lines(b.host(opts{}, "ls", "-A", "/dev").stdout) {
		if !slices.Contains(allowed, d) {
			extra = append(extra, d)
		}
	}
	if len(extra) == 0 {
		t.Errorf("control: host /dev has nothing beyond the sandbox's set")
	}
}

// TestEnvironmentScrubbed: only a clean environment reaches the program;
// --env NAME passes one host variable, --env NAME=VALUE sets one.
func TestEnvironmentScrubbed(t *testing.T) {
	b := newBox(t)
	secrets := []string{"FOO_TOKEN=x", "AWS_SECRET_ACCESS_KEY=y", "SSH_AUTH_SOCK=/tmp/s", "GITHUB_TOKEN=z", "OPENAI_API_KEY=k"}
	hostEnv := append(append([]string{}, secrets...), "TERM=xterm-sbx-test", "LANG=C.UTF-8", "LC_ALL=C", "TZ=UTC")
	parse := func(out string) map[string]string {
		m := map[string]string{}
		for _, l := range lines(out) {
			if k, v, ok := strings.Cut(l, "="); ok {
				m[k] = v
			}
		}
		return m
	}
	allowedName := func(k string) bool {
		switch k {
		case "PATH", "HOME", "USER", "LOGNAME", "TERM", "LANG", "TZ", "COLORTERM", "SBX", "npm_config_fetch_retries":
			return true
		}
		return strings.HasPrefix(k, "LC_")
	}

	// Control: the variables are in sbx's own environment.
	host := parse(b.host(opts{env: hostEnv}, "env").stdout)
	for _, kv := range secrets {
		k, v, _ := strings.Cut(kv, "=")
		if host[k] != v {
			t.Fatalf("control: %s not in the host environment", k)
		}
	}
	for _, c := range []struct {
		name  string
		flags []string
		want  map[string]string // must be set so
		extra []string          // names allowed besides the clean set
	}{
		{"clean", nil, map[string]string{"SBX": "1", "TERM": "xterm-sbx-test", "LANG": "C.UTF-8", "LC_ALL": "C", "TZ": "UTC"}, nil},
		{"--env NAME", []string{"--env", "FOO_TOKEN"}, map[string]string{"FOO_TOKEN": "x", "SBX": "1"}, []string{"FOO_TOKEN"}},
		{"--env NAME=VALUE", []string{"--env", "A=B", "--env", "EMPTY="}, map[string]string{"A": "B", "EMPTY": ""}, []string{"A", "EMPTY"}},
		{"--env unset NAME", []string{"--env", "SBX_IT_NOT_SET_ANYWHERE"}, map[string]string{"SBX": "1"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := b.in(t)
			r := b.runOpts(opts{env: hostEnv}, append(c.flags, "--", "env")...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("env in the sandbox\n%v", r)
			}
			got := parse(r.stdout)
			for k := range got {
				if !allowedName(k) && !slices.Contains(c.extra, k) {
					t.Errorf("%s=%s leaked into the sandbox", k, got[k])
				}
			}
			for k, v := range c.want {
				if w, ok := got[k]; !ok || w != v {
					t.Errorf("%s = %q (set %v), want %q", k, w, ok, v)
				}
			}
			for _, k := range []string{"HOME", "PATH", "USER"} {
				if got[k] == "" {
					t.Errorf("%s not set in the sandbox", k)
				}
			}
		})
	}
}

// TestInheritedFds: a file descriptor sbx inherits does not reach the
// program.
func TestInheritedFds(t *testing.T) {
	b := newBox(t)
	secret := filepath.Join(t.TempDir(), "secret")
	writeFile(t, secret, "secret-content\n", 0o600)
	f, err := os.Open(secret)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	o := opts{extraFiles: []*os.File{nil, nil, f}} // fd 5
	// ls lists its own directory fd (3) besides 0, 1, 2.
	if r := b.runOpts(o, "--", "ls", "/proc/self/fd"); r.code != 0 || r.stdout != "0\n1\n2\n3\n" {
		t.Errorf("fds in the sandbox: want 0 1 2 and ls's own 3\n%v", r)
	}
	if r := b.runOpts(o, "--", "sh", "-c", "cat <&5"); r.code != 2 || r.stdout != "" || !strings.Contains(r.stderr, "Bad file descriptor") {
		t.Errorf("cat <&5 in the sandbox: want EBADF\n%v", r)
	}
	// Control: on the host the same process sees fd 5 and reads it.
	if c := b.host(o, "ls", "/proc/self/fd"); !slices.Contains(lines(c.stdout), "5") {
		t.Errorf("control: fd 5 not passed on the host\n%v", c)
	}
	if c := b.host(o, "sh", "-c", "cat <&5"); c.code != 0 || c.stdout != "secret-content\n" {
		t.Errorf("control: cat <&5 on the host\n%v", c)
	}
}
