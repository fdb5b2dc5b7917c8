package lsm

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/bpf"
)

// statRule is the rule Compile must produce for path, from stat(2): on the
// filesystems tests run on (tmpfs, ext4, overlay directories) st_dev is the
// superblock's device.
func statRule(t *testing.T, path string, write, fs bool) FileRule {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	r := FileRule{Path: path, Dev: kernelDev(unix.Major(st.Dev), unix.Minor(st.Dev)), Ino: st.Ino, Write: write}
	if fs {
		r.Ino = 0
	}
	return r
}

func TestFilePolicyCompile(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	sys := filepath.Join(dir, "sys")
	for _, d := range []string{ws, sys} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	file := writeFile(t, filepath.Join(sys, "file"), "x")
	link := filepath.Join(dir, "link")
	if err := os.Symlink(ws, link); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name  string
		build func(p *FilePolicy)
		want  func() []FileRule
		err   string
	}{{
		name:  "empty policy allows only pipes",
		build: func(p *FilePolicy) {},
		want:  func() []FileRule { return nil },
	}, {
		name:  "directory and file rules",
		build: func(p *FilePolicy) { p.Allow(ws, true).Allow(file, false) },
		want:  func() []FileRule { return []FileRule{statRule(t, ws, true, false), statRule(t, file, false, false)} },
	}, {
		name:  "a symlink names its target",
		build: func(p *FilePolicy) { p.Allow(link, false) },
		want: func() []FileRule {
			r := statRule(t, ws, false, false)
			r.Path = link
			return []FileRule{r}
		},
	}, {
		name:  "the same file twice gets the widest access",
		build: func(p *FilePolicy) { p.Allow(ws, false).Allow(link, true).Allow(ws, false) },
		want:  func() []FileRule { return []FileRule{statRule(t, ws, true, false)} },
	}, {
		name:  "whole filesystem",
		build: func(p *FilePolicy) { p.AllowFilesystem(sys, false) },
		want:  func() []FileRule { return []FileRule{statRule(t, sys, false, true)} },
	}, {
		name:  "a filesystem rule and a file rule differ",
		build: func(p *FilePolicy) { p.AllowFilesystem(sys, false).Allow(sys, true) },
		want:  func() []FileRule { return []FileRule{statRule(t, sys, false, true), statRule(t, sys, true, false)} },
	}, {
		name:  "a list-only rule",
		build: func(p *FilePolicy) { p.AllowList(ws) },
		want: func() []FileRule {
			r := statRule(t, ws, false, false)
			r.List = true
			return []FileRule{r}
		},
	}, {
		name:  "a read rule on the same directory wins over list-only",
		build: func(p *FilePolicy) { p.AllowList(ws).Allow(ws, false) },
		want:  func() []FileRule { return []FileRule{statRule(t, ws, false, false)} },
	}, {
		name:  "a deny rule below an allowed directory is a rule of its own (--mask)",
		build: func(p *FilePolicy) { p.Allow(dir, true).Deny(file) },
		want: func() []FileRule {
			d := statRule(t, file, false, false)
			d.Deny = true
			return []FileRule{statRule(t, dir, true, false), d}
		},
	}, {
		name:  "a deny wins over an allow of the same file, before it",
		build: func(p *FilePolicy) { p.Allow(ws, true).Deny(link) },
		want: func() []FileRule {
			d := statRule(t, ws, false, false)
			d.Deny = true
			return []FileRule{d}
		},
	}, {
		name:  "a deny wins over an allow of the same file, after it",
		build: func(p *FilePolicy) { p.Deny(ws).Allow(ws, true).AllowList(ws) },
		want: func() []FileRule {
			d := statRule(t, ws, false, false)
			d.Deny = true
			return []FileRule{d}
		},
	}, {
		name:  "deny of a missing path",
		build: func(p *FilePolicy) { p.Deny(filepath.Join(dir, "missing")) },
		err:   "no such file or directory",
	}, {
		name:  "list-only needs a directory",
		build: func(p *FilePolicy) { p.AllowList(file) },
		err:   "not a directory",
	}, {
		name:  "relative path",
		build: func(p *FilePolicy) { p.Allow("ws", true) },
		err:   `allow "ws": not an absolute path`,
	}, {
		name:  "missing path",
		build: func(p *FilePolicy) { p.Allow(ws, true).Allow(filepath.Join(dir, "missing"), false) },
		err:   "no such file or directory",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p FilePolicy
			tt.build(&p)
			got, err := p.Compile()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Compile() error = %v, want one containing %q", err, tt.err)
				}
				if tt.err == "no such file or directory" && !errors.Is(err, os.ErrNotExist) {
					t.Errorf("error %v does not wrap os.ErrNotExist", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// The implicit pipe rule comes last.
			if len(got) == 0 || got[len(got)-1].Path != "pipe:" {
				t.Fatalf("Compile() = %+v, want the pipe rule last", got)
			}
			pipe := got[len(got)-1]
			if pipe.Ino != 0 || !pipe.Write || pipe.Dev>>20 != 0 {
				t.Errorf("pipe rule %+v, want pipefs (anonymous device, major 0), whole filesystem, rw", pipe)
			}
			got = got[:len(got)-1]
			want := tt.want()
			if len(got) != len(want) {
				t.Fatalf("Compile() = %+v, want %+v", got, want)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("rule %d = %+v, want %+v", i, got[i], want[i])
				}
			}
		})
	}
}

func TestFilePolicyKeys(t *testing.T) {
	ro := FileRule{Dev: 0x800001, Ino: 42}
	rw := FileRule{Dev: 0x800001, Ino: 42, Write: true}
	if k := ro.key(7); k != (lsmSbxAllowKey{Sandbox: 7, Ino: 42, Dev: 0x800001}) {
		t.Errorf("key = %+v", k)
	}
	if ro.access() != uint32(lsmSbxAccessSBX_ACCESS_READ) || rw.access() != uint32(lsmSbxAccessSBX_ACCESS_WRITE) {
		t.Errorf("access ro %d rw %d", ro.access(), rw.access())
	}
	// A deny is stored as SBX_ACCESS_NONE: lsm.c's walk stops at the
	// nearest listed ancestor and takes its value, so NONE there refuses.
	if deny := (FileRule{Dev: 1, Ino: 2, Write: true, Deny: true}); deny.access() != uint32(lsmSbxAccessSBX_ACCESS_NONE) {
		t.Errorf("deny access %d, want NONE", deny.access())
	}
	if !(lsmSbxAccessSBX_ACCESS_WRITE > lsmSbxAccessSBX_ACCESS_READ && lsmSbxAccessSBX_ACCESS_READ > lsmSbxAccessSBX_ACCESS_NONE) {
		t.Error("lsm.c compares access levels: write must include read")
	}
}

func TestKernelDev(t *testing.T) {
	tests := []struct {
		major, minor uint32
		want         uint32
	}{
		{0, 0, 0},
		{8, 1, 8<<20 | 1},            // sda1
		{0, 26, 26},                  // anonymous (tmpfs, proc)
		{259, 3, 259<<20 | 3},        // nvme
		{0, 1 << 19, 1 << 19},        // large anonymous minor
		{4095, 1<<20 - 1, 1<<32 - 1}, // largest
	}
	for _, tt := range tests {
		if got := kernelDev(tt.major, tt.minor); got != tt.want {
			t.Errorf("kernelDev(%d, %d) = %#x, want %#x", tt.major, tt.minor, got, tt.want)
		}
	}
}

func TestParseMountDevices(t *testing.T) {
	tests := []struct {
		name, in string
		want     map[uint64]uint32
		err      string
	}{{
		name: "mountinfo lines",
		in: "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n" +
			"25 22 0:22 / /proc rw,nosuid - proc proc rw\n" +
			"41 22 0:35 /sub /mnt/with\\040space rw - btrfs /dev/sdb rw\n",
		want: map[uint64]uint32{22: 8<<20 | 1, 25: 22, 41: 35},
	}, {
		name: "empty",
		want: map[uint64]uint32{},
	}, {
		name: "short line",
		in:   "22 1\n",
		err:  "short line",
	}, {
		name: "bad mount id",
		in:   "x 1 8:1 / / rw - ext4 /dev/sda1 rw\n",
		err:  "mount id",
	}, {
		name: "bad device",
		in:   "22 1 81 / / rw - ext4 /dev/sda1 rw\n",
		err:  "device",
	}, {
		name: "major out of range",
		in:   "22 1 4096:1 / / rw - ext4 /dev/sda1 rw\n",
		err:  "device",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseMountDevices(strings.NewReader(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("mount %d: dev %#x, want %#x", k, got[k], v)
				}
			}
		})
	}
}

func FuzzParseMountDevices(f *testing.F) {
	f.Add("22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n25 22 0:22 / /proc rw - proc proc rw\n")
	f.Add("1 1 0:0\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, in string) {
		got, err := parseMountDevices(strings.NewReader(in))
		if err != nil {
			return
		}
		for _, dev := range got {
			if dev>>20 > 4095 {
				t.Errorf("major out of range in %#x", dev)
			}
		}
	})
}

// This host's own mount table must parse, and agree with stat for the
// filesystem the tests' temporary files are on.
func TestMountDevicesHost(t *testing.T) {
	m, err := mountDevices()
	if err != nil {
		t.Fatal(err)
	}
	if len(m) == 0 {
		t.Fatal("no mounts")
	}
	dir := t.TempDir()
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, dir, 0, unix.STATX_MNT_ID, &stx); err != nil {
		t.Fatal(err)
	}
	if stx.Mask&unix.STATX_MNT_ID == 0 {
		t.Skip("kernel reports no mount ids (before 5.8)")
	}
	if got, want := m[stx.Mnt_id], kernelDev(stx.Dev_major, stx.Dev_minor); got != want {
		t.Errorf("mount %d: mountinfo dev %#x, stat dev %#x", stx.Mnt_id, got, want)
	}
}

func TestLSMListError(t *testing.T) {
	tests := []struct {
		list string
		ok   bool
		fix  string
	}{
		{"lockdown,capability,landlock,bpf", true, ""},
		{"bpf", true, ""},
		{"lockdown,capability,landlock,yama,apparmor", false, "boot with lsm=lockdown,capability,landlock,yama,apparmor,bpf"},
		{"capability,bpfx", false, "lsm=capability,bpfx,bpf"},
		{"", false, "boot with lsm=bpf"},
	}
	for _, tt := range tests {
		err := lsmListError(tt.list)
		if tt.ok {
			if err != nil {
				t.Errorf("lsmListError(%q) = %v, want nil", tt.list, err)
			}
			continue
		}
		if !errors.Is(err, ErrInactive) || !strings.Contains(err.Error(), tt.fix) {
			t.Errorf("lsmListError(%q) = %v, want ErrInactive with %q", tt.list, err, tt.fix)
		}
	}
}

func TestLSMLoadError(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the EPERM classification depends on euid 0")
	}
	err := loadError(errors.Join(errors.New("load program"), unix.EPERM))
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "BPF LSM programs refused by this kernel (EPERM at load)") {
		t.Errorf("EPERM: %v", err)
	}
	if err := loadError(unix.ENOTSUP); !errors.Is(err, bpf.ErrNotSupported) {
		t.Errorf("ENOTSUP: %v", err)
	}
	if err := loadError(errors.New("other")); errors.Is(err, ErrRefused) || errors.Is(err, bpf.ErrNotSupported) {
		t.Errorf("other: %v", err)
	}
}

// Inside make vmtest, Supported must succeed. On a host that refuses LSM
// programs, Supported and Open must say so precisely (and fail, not
// pretend).
func TestLSMSupported(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to load BPF programs")
	}
	err := Supported()
	if os.Getenv("SBX_VMTEST") != "" {
		if err != nil {
			t.Fatalf("Supported() = %v inside make vmtest", err)
		}
		return
	}
	if err == nil {
		t.Skip("BPF LSM works here; TestLSMEnforce covers it")
	}
	if !errors.Is(err, ErrRefused) && !errors.Is(err, ErrInactive) && !errors.Is(err, bpf.ErrNotSupported) {
		t.Fatalf("Supported() = %v, want an error wrapping ErrRefused, ErrInactive or bpf.ErrNotSupported", err)
	}
	l, oerr := Open(nil)
	if oerr == nil {
		l.Close()
		t.Fatalf("Open succeeded where Supported says %v", err)
	}
	for _, sentinel := range []error{ErrRefused, ErrInactive, bpf.ErrNotSupported} {
		if errors.Is(err, sentinel) != errors.Is(oerr, sentinel) {
			t.Errorf("Open error %v and Supported error %v disagree", oerr, err)
		}
	}
	t.Logf("reason: %v", err)
}
