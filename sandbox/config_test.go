package sandbox

import (
	"strings"
	"testing"

	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"
)

func testSpec() *Spec {
	return &Spec{
		ID:         "0123456789abcdef",
		Args:       []string{"true"},
		Cwd:        "/work/proj",
		Workspace:  "/work/proj",
		Home:       "/var/lib/sbx/home",
		HomeInside: "/home/alice",
		UID:        1000, GID: 1000,
		Limits: Limits{MemoryBytes: 512 << 20, CPUs: 1.5, Pids: 256},
	}
}

var testLayout = []Entry{
	{Path: "/usr", Dir: true},
	{Path: "/bin", Symlink: "usr/bin"},
	{Path: "/etc", Dir: true},
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Spec)
		want   string // substring of the error; "" for valid
	}{
		{"valid", func(*Spec) {}, ""},
		{"bad id", func(s *Spec) { s.ID = "../x" }, "invalid sandbox id"},
		{"dot id", func(s *Spec) { s.ID = ".." }, "invalid sandbox id"},
		{"no command", func(s *Spec) { s.Args = nil }, "no command"},
		{"empty command", func(s *Spec) { s.Args = []string{""} }, "no command"},
		{"relative workspace", func(s *Spec) { s.Workspace = "proj" }, "not a clean absolute path"},
		{"unclean workspace", func(s *Spec) { s.Workspace = "/work/../etc" }, "not a clean absolute path"},
		{"root workspace", func(s *Spec) { s.Workspace = "/" }, "workspace / is not allowed"},
		{"mount of root", func(s *Spec) { s.ReadOnly = []string{"/"} }, "mount of / is not allowed"},
		{"mount in proc", func(s *Spec) { s.ReadWrite = []string{"/proc/sys"} }, "which sbx provides itself"},
		{"workspace in dev", func(s *Spec) { s.Workspace = "/dev/shm/x" }, "which sbx provides itself"},
		{"negative memory", func(s *Spec) { s.Limits.MemoryBytes = -1 }, "must not be negative"},
		{"negative uid", func(s *Spec) { s.UID = -1 }, "must not be negative"},
		{"protected in writable workspace", func(s *Spec) {
			s.Write, s.Protected, s.Pinned = true, []string{"/work/proj/a/.git"}, []string{"/work/proj/a"}
		}, ""},
		{"protected in --rw path", func(s *Spec) { s.ReadWrite, s.Protected = []string{"/srv/out"}, []string{"/srv/out/.git"} }, ""},
		{"protected in read-only workspace", func(s *Spec) { s.Protected = []string{"/work/proj/.git"} }, "not inside the writable workspace"},
		{"protected workspace itself", func(s *Spec) { s.Write, s.Protected = true, []string{"/work/proj"} }, "not inside the writable workspace"},
		{"protected outside", func(s *Spec) { s.Write, s.Protected = true, []string{"/work/project2/.git"} }, "not inside the writable workspace"},
		{"protected unclean", func(s *Spec) { s.Write, s.Protected = true, []string{"/work/proj/../x/.git"} }, "not inside the writable workspace"},
		{"pinned outside", func(s *Spec) { s.Write, s.Pinned = true, []string{"/etc"} }, "pinned directory"},
		{"pinned --rw path itself", func(s *Spec) { s.ReadWrite, s.Pinned = []string{"/srv/out"}, []string{"/srv/out"} }, "pinned directory"},
		{"pinned inside --ro in the workspace", func(s *Spec) {
			s.Write, s.ReadOnly, s.Pinned = true, []string{"/work/proj/vendor"}, []string{"/work/proj/vendor/lib"}
		}, "pinned directory"},
		{"protected inside the read-only workspace inside --rw", func(s *Spec) {
			s.ReadWrite, s.Protected = []string{"/work"}, []string{"/work/proj/.git"}
		}, "protected path"},
		{"run bind below the home", func(s *Spec) {
			s.RunBinds = []Bind{{Source: "/run/sbx/runs/1/stage", Destination: "/home/alice/.sbx-staging/1", Writable: true}}
		}, ""},
		{"run bind at the home", func(s *Spec) {
			s.RunBinds = []Bind{{Source: "/run/sbx/runs/1", Destination: "/home/alice", Writable: true}}
		}, "destination below the home"},
		{"run bind outside the home", func(s *Spec) { s.RunBinds = []Bind{{Source: "/run/sbx/runs/1", Destination: "/etc/x", Writable: true}} }, "destination below the home"},
		{"run bind beside the home", func(s *Spec) {
			s.RunBinds = []Bind{{Source: "/run/sbx/runs/1", Destination: "/home/alice2/x", Writable: true}}
		}, "destination below the home"},
		{"run bind unclean", func(s *Spec) {
			s.RunBinds = []Bind{{Source: "/run/sbx/runs/1", Destination: "/home/alice/../bob/x", Writable: true}}
		}, "destination below the home"},
		{"pinned inside --rw inside --ro", func(s *Spec) {
			s.Write, s.ReadOnly, s.ReadWrite, s.Pinned = true, []string{"/work/proj/vendor"}, []string{"/work/proj/vendor/x"}, []string{"/work/proj/vendor/x/y"}
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testSpec()
			tc.mutate(s)
			err := s.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want error containing %q", err, tc.want)
			}
		})
	}
}

func findMount(cfg *configs.Config, dst string) *configs.Mount {
	for _, m := range cfg.Mounts {
		if m.Destination == dst {
			return m
		}
	}
	return nil
}

func TestConfigMounts(t *testing.T) {
	for _, write := range []bool{false, true} {
		s := testSpec()
		s.Write = write
		s.ReadOnly = []string{"/srv/data"}
		s.ReadWrite = []string{"/srv/out"}
		cfg, err := s.Config("/run/sbx/run/x/rootfs", "/usr/local/bin/sbx", testLayout)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			dst, src string
			rw       bool
		}{
			{"/usr", "/usr", false},
			{"/etc", "/etc", false},
			{"/home/alice", "/var/lib/sbx/home", true},
			{"/work/proj", "/work/proj", write},
			{"/srv/data", "/srv/data", false},
			{"/srv/out", "/srv/out", true},
			{ShimPath, "/usr/local/bin/sbx", false},
		} {
			m := findMount(cfg, tc.dst)
			if m == nil {
				t.Fatalf("write=%v: no mount at %s", write, tc.dst)
			}
			if m.Source != tc.src || !m.IsBind() {
				t.Errorf("write=%v: mount %s: source %q bind=%v, want bind of %q", write, tc.dst, m.Source, m.IsBind(), tc.src)
			}
			ro := m.Flags&unix.MS_RDONLY != 0
			if ro == tc.rw {
				t.Errorf("write=%v: mount %s: read-only=%v, want %v", write, tc.dst, ro, !tc.rw)
			}
			if m.Flags&unix.MS_NOSUID == 0 || m.Flags&unix.MS_NODEV == 0 {
				t.Errorf("write=%v: mount %s lacks nosuid/nodev", write, tc.dst)
			}
			if ro && m.Destination != ShimPath && (m.RecAttr == nil || m.RecAttr.Attr_set&unix.MOUNT_ATTR_RDONLY == 0) {
				t.Errorf("write=%v: mount %s is not recursively read-only", write, tc.dst)
			}
		}
		if findMount(cfg, "/bin") != nil {
			t.Errorf("/bin is a symlink in the layout and must not be mounted")
		}
		tmp := findMount(cfg, "/tmp")
		if tmp == nil || tmp.Device != "tmpfs" {
			t.Fatalf("no tmpfs at /tmp")
		}
		if !cfg.Readonlyfs || !cfg.NoNewPrivileges {
			t.Errorf("Readonlyfs=%v NoNewPrivileges=%v, want both", cfg.Readonlyfs, cfg.NoNewPrivileges)
		}
	}
}

func TestConfigMountOrder(t *testing.T) {
	// A workspace below /tmp and below the home must be mounted after them,
	// or the tmpfs/home would hide it.
	for _, ws := range []string{"/tmp/ws", "/home/alice/proj"} {
		s := testSpec()
		s.Workspace, s.Cwd = ws, ws
		cfg, err := s.Config("/r", "/sbx", testLayout)
		if err != nil {
			t.Fatal(err)
		}
		idx := map[string]int{}
		for i, m := range cfg.Mounts {
			idx[m.Destination] = i
		}
		if idx[ws] < idx["/tmp"] || idx[ws] < idx["/home/alice"] {
			t.Errorf("workspace %s mounted at %d, before /tmp (%d) or home (%d)", ws, idx[ws], idx["/tmp"], idx["/home/alice"])
		}
		if idx["/dev/pts"] < idx["/dev"] {
			t.Errorf("/dev/pts mounted before /dev")
		}
	}
}

// TestConfigProtected: pins are writable self-binds mounted before the
// read-only entries below them; --rw paths inside an entry come after it.
func TestConfigProtected(t *testing.T) {
	s := testSpec()
	s.Write = true
	s.Pinned = []string{"/work/proj/a", "/work/proj/a/b"}
	s.Protected = []string{"/work/proj/.git", "/work/proj/a/b/.git"}
	s.ReadWrite = []string{"/work/proj/.git/hooks"}
	cfg, err := s.Config("/r", "/sbx", testLayout)
	if err != nil {
		t.Fatal(err)
	}
	idx := map[string]int{}
	for i, m := range cfg.Mounts {
		idx[m.Destination] = i
	}
	for _, tc := range []struct {
		dst string
		rw  bool
	}{{"/work/proj/a", true}, {"/work/proj/a/b", true}, {"/work/proj/.git", false}, {"/work/proj/a/b/.git", false}, {"/work/proj/.git/hooks", true}} {
		m := findMount(cfg, tc.dst)
		if m == nil {
			t.Fatalf("no mount at %s", tc.dst)
		}
		if m.Source != tc.dst || !m.IsBind() || (m.Flags&unix.MS_RDONLY == 0) != tc.rw {
			t.Errorf("mount %s: source %q bind=%v read-only=%v, want a self-bind, writable=%v", tc.dst, m.Source, m.IsBind(), m.Flags&unix.MS_RDONLY != 0, tc.rw)
		}
	}
	for _, order := range [][2]string{
		{"/work/proj", "/work/proj/a"}, {"/work/proj/a", "/work/proj/a/b"}, {"/work/proj/a/b", "/work/proj/a/b/.git"},
		{"/work/proj", "/work/proj/.git"}, {"/work/proj/.git", "/work/proj/.git/hooks"},
	} {
		if idx[order[0]] >= idx[order[1]] {
			t.Errorf("%s mounted at %d, not before %s (%d)", order[0], idx[order[0]], order[1], idx[order[1]])
		}
	}
}

func TestConfigIsolation(t *testing.T) {
	cfg, err := testSpec().Config("/r", "/sbx", testLayout)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []configs.NamespaceType{configs.NEWNS, configs.NEWPID, configs.NEWIPC, configs.NEWUTS, configs.NEWNET, configs.NEWCGROUP} {
		if !cfg.Namespaces.Contains(ns) {
			t.Errorf("namespace %s missing", ns)
		}
	}
	c := cfg.Capabilities
	if c == nil || len(c.Bounding)+len(c.Effective)+len(c.Permitted)+len(c.Inheritable)+len(c.Ambient) != 0 {
		t.Errorf("capabilities = %+v, want none at all", c)
	}
	r := cfg.Cgroups.Resources
	if r.Memory != 512<<20 || r.MemorySwap != 512<<20 {
		t.Errorf("memory %d swap %d, want 512 MiB both", r.Memory, r.MemorySwap)
	}
	if r.CpuQuota != 150000 || r.CpuPeriod != 100000 {
		t.Errorf("cpu quota %d/%d, want 150000/100000", r.CpuQuota, r.CpuPeriod)
	}
	if r.PidsLimit == nil || *r.PidsLimit != 256 {
		t.Errorf("pids limit %v, want 256", r.PidsLimit)
	}
	if cfg.Cgroups.Path != "/sbx/0123456789abcdef" {
		t.Errorf("cgroup path %q", cfg.Cgroups.Path)
	}
	grouped := testSpec()
	grouped.WallGroup = "net-00112233aabbccdd"
	if cfg, err := grouped.Config("/r", "/sbx", testLayout); err != nil {
		t.Errorf("with a wall group: %v", err)
	} else if cfg.Cgroups.Path != "/sbx/net-00112233aabbccdd/0123456789abcdef" {
		t.Errorf("cgroup path with a wall group %q, want /sbx/net-00112233aabbccdd/0123456789abcdef", cfg.Cgroups.Path)
	}
	if dirs := grouped.cgroupDirs(); len(dirs) == 0 || dirs[0] != "/sys/fs/cgroup/sbx/net-00112233aabbccdd/0123456789abcdef" {
		t.Errorf("the watcher's cgroups %q, want /sys/fs/cgroup/sbx/net-00112233aabbccdd/0123456789abcdef first", dirs)
	}
	if cfg.Seccomp == nil {
		t.Error("no seccomp filter")
	}
	for _, p := range []string{"/proc/kcore", "/proc/keys", "/proc/sysrq-trigger"} {
		found := false
		for _, m := range cfg.MaskPaths {
			found = found || m == p
		}
		if !found {
			t.Errorf("%s not masked", p)
		}
	}
}

func TestLandlockPolicy(t *testing.T) {
	for _, write := range []bool{false, true} {
		s := testSpec()
		s.Write = write
		s.ReadOnly = []string{"/srv/data"}
		s.ReadWrite = []string{"/srv/out"}
		p := s.LandlockPolicy(testLayout)
		has := func(list []string, x string) bool {
			for _, v := range list {
				if v == x {
					return true
				}
			}
			return false
		}
		if has(p.ReadWrite, "/work/proj") != write || has(p.ReadExec, "/work/proj") == write {
			t.Errorf("write=%v: workspace in ReadWrite=%v ReadExec=%v", write, has(p.ReadWrite, "/work/proj"), has(p.ReadExec, "/work/proj"))
		}
		for _, x := range []string{"/usr", "/etc", "/srv/data"} {
			if !has(p.ReadExec, x) || has(p.ReadWrite, x) {
				t.Errorf("%s should be read-only", x)
			}
		}
		for _, x := range []string{"/tmp", "/home/alice", "/srv/out"} {
			if !has(p.ReadWrite, x) {
				t.Errorf("%s should be writable", x)
			}
		}
		if has(p.ReadExec, "/bin") {
			t.Errorf("symlink /bin must not get a rule of its own")
		}
		if p.Canary != ShimPath || !has(p.ListOnly, "/") {
			t.Errorf("canary %q, list-only %v", p.Canary, p.ListOnly)
		}
	}
}
