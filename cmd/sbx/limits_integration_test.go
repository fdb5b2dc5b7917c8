package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/internal/sbxtest"
	"github.com/sbx-sandbox/sbx/sandbox"
)

const python = "/usr/bin/python3"

// hog allocates and touches 200 MiB.
const hog = `s = b"x" * (200 << 20); print("allocated", len(s) >> 20)`

// reserve maps (without touching) GiB of writable memory given as its
// argument: past the rlimit fallback's RLIMIT_DATA for sbx run's default
// memory (half the RAM), nothing the host refuses (MAP_NORESERVE: no
// commit charge).
const reserve = `import mmap, sys
m = mmap.mmap(-1, int(sys.argv[1]) << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | getattr(mmap, "MAP_NORESERVE", 0x4000))
print("reserved", len(m) >> 30)`

// reserveGiB is a reservation just past the default RLIMIT_DATA.
func reserveGiB() string { return strconv.FormatInt(hostMemory()>>30+1, 10) }

func TestMemoryLimit(t *testing.T) {
	b := newBox(t)
	if _, err := os.Stat(python); err != nil {
		t.Fatalf("the memory test needs %s: %v", python, err)
	}
	if rlimitMode() {
		// Rootless without a delegated cgroup: --memory refuses to run,
		// the default limit is an RLIMIT_DATA of half the RAM.
		for _, memory := range []string{"64m", "1g"} {
			wantLimitsRefused(t, b.run("--memory", memory, "--", python, "-c", hog), "--memory")
		}
		if r := b.run("--", python, "-c", hog); r.code != 0 || r.stdout != "allocated 200\n" || r.stderr != "" {
			t.Errorf("200 MiB under the default RLIMIT_DATA: want success\n%v", r)
		}
		gib := reserveGiB()
		if r := b.run("--", python, "-c", reserve, gib); r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "OSError: [Errno 12] Cannot allocate memory") {
			t.Errorf("%s GiB of writable memory past the default RLIMIT_DATA: want ENOMEM\n%v", gib, r)
		}
		if c := b.host(opts{}, python, "-c", reserve, gib); c.code != 0 || c.stdout != "reserved "+gib+"\n" {
			t.Errorf("control: %s GiB of address space on the host\n%v", gib, c)
		}
		checkWasmSurvives(t, b.run)
		return
	}
	for _, c := range []struct {
		memory string
		code   int
		stdout string
		stderr string // prefix of the only stderr line, "" for none
	}{
		{"64m", 128 + 9, "", "sbx: out of memory: the program was killed at its 64m limit"},
		{"1g", 0, "allocated 200\n", ""},
	} {
		t.Run(c.memory, func(t *testing.T) {
			t.Parallel()
			b := b.in(t)
			r := b.run("--memory", c.memory, "--", python, "-c", hog)
			l := lines(r.stderr)
			okErr := c.stderr == "" && len(l) == 0 || c.stderr != "" && len(l) == 1 && strings.HasPrefix(l[0], c.stderr)
			if r.code != c.code || r.stdout != c.stdout || !okErr {
				t.Errorf("--memory %s, 200 MiB: want exit %d, stdout %q, stderr %q\n%v", c.memory, c.code, c.stdout, c.stderr, r)
			}
		})
	}
	// Control: the allocation works on the host too.
	if c := b.host(opts{}, python, "-c", hog); c.code != 0 || c.stdout != "allocated 200\n" {
		t.Errorf("control: 200 MiB on the host\n%v", c)
	}
}

func TestPidsLimit(t *testing.T) {
	b := newBox(t)
	forkMany := `for i in $(seq 40); do sleep 1 & done; wait; echo done`
	if rlimitMode() {
		// Rootless without a delegated cgroup: --pids refuses to run,
		// the default limit (runDefaultPids) is an RLIMIT_NPROC, counted
		// in the sandbox's user namespace (its value: TestRootlessLimits).
		for _, pids := range []string{"20", "256"} {
			wantLimitsRefused(t, b.run("--pids", pids, "--", "sh", "-c", forkMany), "--pids")
		}
		if r := b.run("--", "sh", "-c", forkMany); r.code != 0 || r.stdout != "done\n" || r.stderr != "" {
			t.Errorf("40 children under the default RLIMIT_NPROC: want success\n%v", r)
		}
		return
	}
	t.Run("20", func(t *testing.T) {
		t.Parallel()
		b := b.in(t)
		r := b.run("--pids", "20", "--", "sh", "-c", forkMany)
		if r.code == 0 || strings.Contains(r.stdout, "done") || !strings.Contains(r.stderr, "Cannot fork") {
			t.Errorf("--pids 20, 40 children: want fork to fail (\"Cannot fork\")\n%v", r)
		}
	})
	t.Run("256", func(t *testing.T) {
		t.Parallel()
		b := b.in(t)
		if r := b.run("--pids", "256", "--", "sh", "-c", forkMany); r.code != 0 || r.stdout != "done\n" || r.stderr != "" {
			t.Errorf("--pids 256, 40 children: want success\n%v", r)
		}
	})
}

// TestCgroupLimits reads the sandbox's cgroup files on the host while it
// runs: the limits given (or the defaults) are what the kernel enforces.
// Rootless without a delegated cgroup, there is no cgroup of the sandbox at
// all: the defaults are the program's rlimits, and explicit limits refuse
// to run.
func TestCgroupLimits(t *testing.T) {
	b := newBox(t)
	for _, c := range []struct {
		name   string
		flags  []string
		quota  string // CPU quota per 100000 us period
		memory string
		pids   string
	}{
		// sbx run's defaults: all CPUs, half the RAM, runDefaultPids.
		{"defaults", nil, strconv.Itoa(int(hostCPUs() * 100000)), strconv.FormatInt(hostMemory(), 10), strconv.Itoa(runDefaultPids)},
		{"set", []string{"--cpus", "0.5", "--memory", "96m", "--pids", "33"}, "50000", "100663296", "33"},
		{"two cpus", []string{"--cpus", "2", "--memory", "1g", "--pids", "1000"}, "200000", "1073741824", "1000"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := b.in(t)
			if rlimitMode() && len(c.flags) > 0 {
				wantLimitsRefused(t, b.run(append(append([]string{"--timeout", "5s"}, c.flags...), "--", "true")...), "--cpus, --memory, --pids")
				return
			}
			// The timeout ends the run (signals are tested elsewhere).
			p := b.start(opts{}, append(append([]string{"run", "--timeout", "5s"}, c.flags...), "--", "sh", "-c", "echo ready; exec sleep 30")...)
			p.waitLine("ready")
			ids, err := runs.ids(p.cmd.Process.Pid, p.start, 5*time.Second)
			if err != nil || len(ids) != 1 {
				p.signal(syscall.SIGKILL)
				p.wait()
				t.Fatalf("sandbox id of the run: %v %v", ids, err)
			}
			id := ids[0]
			if rlimitMode() {
				checkRlimits(t, p, id, c.memory, c.pids)
				return
			}
			got := map[string]string{}
			cgroup2 := filepath.Join(cgroupRoot, rootCgroup(id))
			if rootless() {
				cgroup2 = filepath.Join(asUser.delegated, "sbx", id)
			}
			if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil || rootless() {
				// cgroup2 only (or the user's delegated subtree).
				dir := cgroup2
				got["cpu"] = readTrim(t, filepath.Join(dir, "cpu.max"))
				got["memory"] = readTrim(t, filepath.Join(dir, "memory.max"))
				got["pids"] = readTrim(t, filepath.Join(dir, "pids.max"))
				if want := c.quota + " 100000"; got["cpu"] != want {
					t.Errorf("cpu.max = %q, want %q", got["cpu"], want)
				}
			} else {
				got["cpu"] = readTrim(t, filepath.Join(cgroupRoot, "cpu", rootCgroup(id), "cpu.cfs_quota_us"))
				got["period"] = readTrim(t, filepath.Join(cgroupRoot, "cpu", rootCgroup(id), "cpu.cfs_period_us"))
				got["memory"] = readTrim(t, filepath.Join(cgroupRoot, "memory", rootCgroup(id), "memory.limit_in_bytes"))
				got["pids"] = readTrim(t, filepath.Join(cgroupRoot, "pids", rootCgroup(id), "pids.max"))
				if got["cpu"] != c.quota || got["period"] != "100000" {
					t.Errorf("cpu.cfs_quota_us/period = %s/%s, want %s/100000", got["cpu"], got["period"], c.quota)
				}
			}
			if got["memory"] != c.memory || got["pids"] != c.pids {
				t.Errorf("memory limit = %s, pids.max = %s; want %s, %s", got["memory"], got["pids"], c.memory, c.pids)
			}
			if r := p.wait(); r.code != 124 {
				t.Errorf("--timeout 5s: want 124\n%v", r)
			}
		})
	}
}

// checkRlimits checks, while run p of sandbox id runs (sleeping), that its
// program has the rlimits of memory (RLIMIT_DATA) and pids
// (RLIMIT_NPROC), stays in sbx's own cgroup, and that no cgroup of the
// sandbox exists; then that p times out.
func checkRlimits(t *testing.T, p *proc, id, memory, pids string) {
	t.Helper()
	defer func() {
		if r := p.wait(); r.code != 124 {
			t.Errorf("--timeout 5s: want 124\n%v", r)
		}
	}()
	sleeper := descendant(p.cmd.Process.Pid, "sleep", 5*time.Second)
	if sleeper == 0 {
		t.Fatal("the sandboxed sleep never showed up")
	}
	mem, err := strconv.ParseInt(memory, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	data := strconv.FormatInt(mem, 10)
	lim := procLimits(t, sleeper)
	if lim["Max processes"] != pids+" "+pids || lim["Max data size"] != data+" "+data || lim["Max address space"] != "unlimited unlimited" || lim["Max cpu time"] != "unlimited unlimited" {
		t.Errorf("rlimits of the program: processes %q, data %q, address space %q, cpu time %q; want %s, %s, unlimited and unlimited",
			lim["Max processes"], lim["Max data size"], lim["Max address space"], lim["Max cpu time"], pids, data)
	}
	if own, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/cgroup"); err != nil {
		t.Error(err)
	} else if in, err := os.ReadFile("/proc/" + strconv.Itoa(sleeper) + "/cgroup"); err != nil || string(in) != string(own) {
		t.Errorf("the program's cgroups %q (%v), want sbx's own %q", in, err, own)
	}
	if cg := sandboxCgroups(sandbox.CgroupParent, id); len(cg) > 0 {
		t.Errorf("a rootless sandbox without a delegated cgroup made cgroups: %q", cg)
	}
	// Control: the host's own limits are not the sandbox's.
	if host := procLimits(t, p.cmd.Process.Pid); host["Max data size"] == lim["Max data size"] {
		t.Errorf("control: sbx itself has the program's data limit %q", host["Max data size"])
	}
}

// wantLimitsRefused checks the refusal of a rootless run without a
// delegated cgroup given explicit limits: 125, the flags named, the fix,
// nothing run.
func wantLimitsRefused(t *testing.T, r result, flags string) {
	t.Helper()
	l := lines(r.stderr)
	if r.code != exitSbxError || r.stdout != "" || len(l) != 1 || !strings.HasPrefix(l[0], "sbx: "+flags+": cannot enforce as cgroup limits without root: ") || !strings.Contains(l[0], "fix: ") || len(r.ids) != 0 {
		t.Errorf("%s rootless without a delegated cgroup: want 125, one line naming %s and the fix, nothing run\n%v", flags, flags, r)
	}
}

// procLimits reads the soft and hard limits of pid by name ("Max
// processes"), from /proc/PID/limits.
func procLimits(t *testing.T, pid int) map[string]string {
	t.Helper()
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/limits")
	if err != nil {
		t.Fatalf("limits of %d: %v", pid, err)
	}
	m := map[string]string{}
	for _, l := range lines(string(data))[1:] {
		if len(l) > 26 {
			f := strings.Fields(l[26:])
			if len(f) >= 2 {
				m[strings.TrimSpace(l[:26])] = f[0] + " " + f[1]
			}
		}
	}
	return m
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("read %s: %v", path, err)
		return ""
	}
	return strings.TrimSpace(string(data))
}

// wasmProbe instantiates a WebAssembly module with a memory, as every Node
// fetch does (undici): V8 reserves ~10 GiB of address space for it.
const wasmProbe = `WebAssembly.instantiate(new Uint8Array([0,97,115,109,1,0,0,0,5,3,1,0,1])).then(() => console.log("wasm ok"), e => { console.log(e.message); process.exit(1) })`

// fetchProbe is a Node fetch from a server of its own on the sandbox's
// loopback: undici instantiates its HTTP parser as WebAssembly.
const fetchProbe = `const s = require("http").createServer((q, r) => r.end("pong")).listen(0, "127.0.0.1", async () => {
  try { const r = await fetch("http://127.0.0.1:" + s.address().port); console.log("fetch", await r.text()) }
  catch (e) { console.log((e.cause || e).message); process.exitCode = 1 }
  s.close() })`

// checkWasmSurvives checks that a V8 program reserving address space runs
// under the rlimit fallback (RLIMIT_DATA), while the same program on the
// host under the old fallback, an RLIMIT_AS of 8x 512 MiB, fails: the
// limit is what makes the difference.
func checkWasmSurvives(t *testing.T, run func(args ...string) result) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/node"); err != nil {
		sbxtest.Skip(t, sbxtest.Node, "needs /usr/bin/node (.ci/deps.sh installs nodejs)")
	}
	if r := run("--", "node", "-e", wasmProbe); r.code != 0 || r.stdout != "wasm ok\n" {
		t.Errorf("WebAssembly under the rlimit fallback: want it to run\n%v", r)
	}
	if r := run("--", "node", "-e", fetchProbe); r.code != 0 || r.stdout != "fetch pong\n" {
		t.Errorf("a Node fetch under the rlimit fallback: want it to work\n%v", r)
	}
	host := func(limit string) (string, error) {
		out, err := exec.Command("prlimit", limit, "/usr/bin/node", "-e", wasmProbe).Output()
		return string(out), err
	}
	if out, err := host("--as=" + strconv.Itoa(8*512<<20)); err == nil || !strings.Contains(out, "Out of memory") {
		t.Errorf("control: WebAssembly under RLIMIT_AS 4 GiB (the old fallback) on the host: got %q (%v), want Out of memory", out, err)
	}
	if out, err := host("--data=" + strconv.Itoa(512<<20)); err != nil || out != "wasm ok\n" {
		t.Errorf("control: WebAssembly under RLIMIT_DATA 512 MiB on the host: got %q (%v), want it to run", out, err)
	}
	out, err := exec.Command("prlimit", "--as="+strconv.Itoa(8*512<<20), "/usr/bin/node", "-e", fetchProbe).Output()
	if err == nil || !strings.Contains(string(out), "Out of memory") {
		t.Errorf("control: a Node fetch under RLIMIT_AS 4 GiB on the host: got %q (%v), want Out of memory", out, err)
	}
}
