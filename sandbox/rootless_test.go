package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"
)

func TestRootlessConfig(t *testing.T) {
	s := testSpec()
	s.Rootless = true
	cfg, err := s.Config("/tmp/sbx-1000/run/x/rootfs", "/usr/local/bin/sbx", testLayout)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.RootlessEUID || !cfg.RootlessCgroups || !cfg.Cgroups.Rootless {
		t.Errorf("rootless flags not set: euid=%v cgroups=%v manager=%v", cfg.RootlessEUID, cfg.RootlessCgroups, cfg.Cgroups.Rootless)
	}
	for _, ns := range []configs.NamespaceType{configs.NEWUSER, configs.NEWNS, configs.NEWPID, configs.NEWIPC, configs.NEWUTS, configs.NEWNET, configs.NEWCGROUP} {
		if !cfg.Namespaces.Contains(ns) {
			t.Errorf("no %s namespace", ns)
		}
	}
	want := []configs.IDMap{{ContainerID: 0, HostID: 1000, Size: 1}}
	if len(cfg.UIDMappings) != 1 || cfg.UIDMappings[0] != want[0] || len(cfg.GIDMappings) != 1 || cfg.GIDMappings[0] != want[0] {
		t.Errorf("mappings uid %v gid %v, want the single %v", cfg.UIDMappings, cfg.GIDMappings, want)
	}
	r := cfg.Cgroups.Resources
	if r.Memory != 0 || r.CpuQuota != 0 || r.PidsLimit != nil || len(r.Devices) != 0 || cfg.Cgroups.Path != "" {
		t.Errorf("cgroup limits set without a delegated cgroup: %+v path %q", r, cfg.Cgroups.Path)
	}
	got := map[int]uint64{}
	for _, rl := range cfg.Rlimits {
		if rl.Soft != rl.Hard {
			t.Errorf("rlimit %d: soft %d != hard %d (the program could raise it)", rl.Type, rl.Soft, rl.Hard)
		}
		got[rl.Type] = rl.Hard
	}
	if got[unix.RLIMIT_DATA] != 512<<20 || got[unix.RLIMIT_NPROC] != 256 {
		t.Errorf("rlimits %v, want DATA %d and NPROC 256", got, 512<<20)
	}
	if _, ok := got[unix.RLIMIT_AS]; ok {
		t.Errorf("RLIMIT_AS set: V8's and Bun's address-space reservations fail under it")
	}
	if cfg.Seccomp == nil {
		t.Fatal("no seccomp filter")
	}
	// The shim may create the program's user namespace (execstep.go), and
	// holds only the two capabilities that takes, in this namespace.
	newUser := seccompCase{name: "clone", args: [6]uint64{unix.CLONE_NEWUSER | 0x11}}
	if got := evalRules(t, cfg.Seccomp, newUser); got != 0 {
		t.Errorf("shim filter: clone(CLONE_NEWUSER) gives %v, want allowed", errnoName(got))
	}
	c := cfg.Capabilities
	if c == nil || !slices.Equal(c.Bounding, shimCaps) || !slices.Equal(c.Effective, shimCaps) || !slices.Equal(c.Permitted, shimCaps) ||
		len(c.Inheritable) != 0 || len(c.Ambient) != 0 {
		t.Errorf("shim capabilities %+v, want %v bounding, effective and permitted only", c, shimCaps)
	}

	// With a delegated subtree the limits are cgroup limits again.
	s.Cgroup = "/user.slice/user-1000.slice/user@1000.service/sbx/" + s.ID
	cfg, err = s.Config("/tmp/sbx-1000/run/x/rootfs", "/usr/local/bin/sbx", testLayout)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Cgroups.Path != s.Cgroup || cfg.Cgroups.Resources.Memory != 512<<20 || cfg.Cgroups.Resources.PidsLimit == nil {
		t.Errorf("delegated: path %q resources %+v", cfg.Cgroups.Path, cfg.Cgroups.Resources)
	}
	for _, rl := range cfg.Rlimits {
		if rl.Type == unix.RLIMIT_DATA || rl.Type == unix.RLIMIT_NPROC {
			t.Errorf("delegated: rlimit %d set as well", rl.Type)
		}
	}

	// Root's config is untouched.
	s.Rootless, s.Cgroup = false, ""
	cfg, err = s.Config("/run/sbx/run/x/rootfs", "/usr/local/bin/sbx", testLayout)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.RootlessEUID || cfg.Namespaces.Contains(configs.NEWUSER) || len(cfg.UIDMappings) != 0 {
		t.Error("root's config got rootless settings")
	}
	if got := evalRules(t, cfg.Seccomp, newUser); got != unix.EPERM {
		t.Errorf("root's filter: clone(CLONE_NEWUSER) gives %v, want EPERM", errnoName(got))
	}
	if c := cfg.Capabilities; c == nil || len(c.Bounding)+len(c.Effective)+len(c.Permitted) != 0 {
		t.Errorf("root's sandbox has capabilities: %+v", c)
	}
}

func TestValidateCgroup(t *testing.T) {
	s := testSpec()
	s.Cgroup = "/user.slice/x"
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "rootless") {
		t.Errorf("cgroup for a root sandbox: %v", err)
	}
	s.Rootless = true
	if err := s.Validate(); err != nil {
		t.Errorf("valid rootless cgroup: %v", err)
	}
	s.Cgroup = "/user.slice/../x"
	if err := s.Validate(); err == nil {
		t.Error("unclean cgroup path accepted")
	}
}

func TestValidateWallGroup(t *testing.T) {
	for _, tc := range []struct {
		group    string
		rootless bool
		ok       bool
	}{
		{"", false, true},
		{"net-0123456789abcdef", false, true},
		{"net-0123456789abcdef", true, false}, // rootless runs have no wall
		{"net-", false, false},
		{"0123456789abcdef", false, false},
		{"net-a/b", false, false},
		{"net-..", false, false},
		{"../net-x", false, false},
		{"net-a b", false, false},
	} {
		s := testSpec()
		s.WallGroup, s.Rootless = tc.group, tc.rootless
		if err := s.Validate(); (err == nil) != tc.ok {
			t.Errorf("wall group %q (rootless %v): %v, want ok %v", tc.group, tc.rootless, err, tc.ok)
		}
	}
}

// fakeCgroup2 lays out a cgroup2 tree with user@UID.service as dir owned by
// the caller (these tests run as whoever runs go test: the ownership check
// compares with the caller's uid).
func fakeCgroup2(t *testing.T, uid int, subtree string, writable bool) string {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "user.slice", "user-1000.slice", "user@1000.service")
	if err := os.MkdirAll(filepath.Join(dir, "app.slice", "x.scope"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"cgroup.procs", "cgroup.subtree_control"} {
		mode := os.FileMode(0o644)
		if !writable {
			mode = 0o444
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(subtree), mode); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestFindDelegation(t *testing.T) {
	me := os.Geteuid()
	self := map[string]string{"": "/user.slice/user-1000.slice/user@1000.service/app.slice/x.scope"}
	for _, tc := range []struct {
		name     string
		unified  bool
		self     map[string]string
		uid      int
		subtree  string
		writable bool
		want     string // error substring, "" for found
	}{
		{"delegated", true, self, 1000, "cpu memory pids\n", true, ""},
		{"hybrid", false, self, 1000, "cpu memory pids", true, "cgroup v1"},
		{"no session", true, map[string]string{"": "/system.slice/ssh.service"}, 1000, "", true, "not in a systemd user session"},
		{"other user's session", true, self, 1001, "", true, "user@1001.service"},
		{"v1 only entries", true, map[string]string{"memory": "/user.slice"}, 1000, "", true, "no cgroup2 entry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := fakeCgroup2(t, tc.uid, tc.subtree, tc.writable)
			// The ownership check uses the real owner: the caller.
			uid := tc.uid
			if tc.want == "" {
				uid = me
				tc.self = map[string]string{"": strings.ReplaceAll(tc.self[""], "1000", itoa(me))}
				os.Rename(filepath.Join(root, "user.slice", "user-1000.slice"), filepath.Join(root, "user.slice", "user-"+itoa(me)+".slice"))
				os.Rename(filepath.Join(root, "user.slice", "user-"+itoa(me)+".slice", "user@1000.service"), filepath.Join(root, "user.slice", "user-"+itoa(me)+".slice", "user@"+itoa(me)+".service"))
			}
			d, err := FindDelegation(root, tc.unified, tc.self, uid)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %+v, %v; want error with %q", d, err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !d.Has("memory", "pids", "cpu") || d.Has("io") {
				t.Errorf("controllers %q", d.Controllers)
			}
			want := "/user.slice/user-" + itoa(me) + ".slice/user@" + itoa(me) + ".service/sbx/abc"
			if got := d.CgroupFor("abc"); got != want {
				t.Errorf("CgroupFor = %q, want %q", got, want)
			}
		})
	}
	t.Run("not owned", func(t *testing.T) {
		if me == 0 {
			// Root owns the fake tree; any other uid is "not owned".
			root := fakeCgroup2(t, 1000, "memory", true)
			if _, err := FindDelegation(root, true, self, 1000); err == nil || !strings.Contains(err.Error(), "not delegated to uid 1000") {
				t.Errorf("got %v", err)
			}
		}
	})
}

func itoa(n int) string { return strconv.Itoa(n) }
