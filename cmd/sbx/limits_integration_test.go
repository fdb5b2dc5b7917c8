package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const python = "/usr/bin/python3"

// hog allocates and touches 200 MiB.
const hog = `s = b"x" * (200 << 20); print("allocated", len(s) >> 20)`

func TestMemoryLimit(t *testing.T) {
	b := newBox(t)
	if _, err := os.Stat(python); err != nil {
		t.Fatalf("the memory test needs %s: %v", python, err)
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
func TestCgroupLimits(t *testing.T) {
	b := newBox(t)
	for _, c := range []struct {
		name   string
		flags  []string
		quota  string // CPU quota per 100000 us period
		memory string
		pids   string
	}{
		{"defaults", nil, "100000", "536870912", "256"},
		{"set", []string{"--cpus", "0.5", "--memory", "96m", "--pids", "33"}, "50000", "100663296", "33"},
		{"two cpus", []string{"--cpus", "2", "--memory", "1g", "--pids", "1000"}, "200000", "1073741824", "1000"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := b.in(t)
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
			got := map[string]string{}
			if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
				// cgroup2 only.
				dir := filepath.Join(cgroupRoot, "sbx", id)
				got["cpu"] = readTrim(t, filepath.Join(dir, "cpu.max"))
				got["memory"] = readTrim(t, filepath.Join(dir, "memory.max"))
				got["pids"] = readTrim(t, filepath.Join(dir, "pids.max"))
				if want := c.quota + " 100000"; got["cpu"] != want {
					t.Errorf("cpu.max = %q, want %q", got["cpu"], want)
				}
			} else {
				got["cpu"] = readTrim(t, filepath.Join(cgroupRoot, "cpu", "sbx", id, "cpu.cfs_quota_us"))
				got["period"] = readTrim(t, filepath.Join(cgroupRoot, "cpu", "sbx", id, "cpu.cfs_period_us"))
				got["memory"] = readTrim(t, filepath.Join(cgroupRoot, "memory", "sbx", id, "memory.limit_in_bytes"))
				got["pids"] = readTrim(t, filepath.Join(cgroupRoot, "pids", "sbx", id, "pids.max"))
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

func readTrim(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("read %s: %v", path, err)
		return ""
	}
	return strings.TrimSpace(string(data))
}
