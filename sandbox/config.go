package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/opencontainers/cgroups"
	devconfig "github.com/opencontainers/cgroups/devices/config"
	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/specconv"
	"golang.org/x/sys/unix"
)

// ShimPath is where the sbx binary is bind-mounted (read-only) inside every
// sandbox, to run as the sandbox's PID 1.
const ShimPath = "/.sbx/sbx"

// CgroupParent is the cgroup (relative to each hierarchy's root) under which
// every sandbox's cgroup is created: <root>/sbx/<wall group>/<id> for a root
// sandbox (see [Spec.WallGroup]), <root>/sbx/<id> without one.
const CgroupParent = "sbx"

// WallGroupPrefix begins the name of every wall group, the per-build cgroup
// directories below [CgroupParent] (netwall.WallID). sbx never names a
// sandbox's cgroup directly below CgroupParent like that, so the sweep of
// stale cgroups tells the two apart by it.
const WallGroupPrefix = "net-"

// systemDirs are the host directories shown read-only. A name that is a
// symlink on the host (merged /usr) is recreated as the same symlink.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"}

// MaskedPaths are hidden inside every sandbox even though their parent is
// visible: secrets of the host system (files get /dev/null, directories an
// empty read-only tmpfs). Paths that do not exist on a host are skipped.
var MaskedPaths = []string{
	"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
	"/etc/sudoers", "/etc/sudoers.d", "/etc/security/opasswd",
	"/etc/ssl/private", "/etc/ssh/ssh_host_rsa_key", "/etc/ssh/ssh_host_ecdsa_key",
	"/etc/ssh/ssh_host_ed25519_key", "/etc/ssh/ssh_host_dsa_key",
	"/etc/libvirt", "/etc/docker", "/etc/containerd", "/etc/kubernetes",
	"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug",
	"/proc/acpi", "/proc/scsi", "/proc/sysrq-trigger", "/proc/kallsyms",
}

// readonlyProc are the /proc entries remounted read-only.
var readonlyProc = []string{"/proc/sys", "/proc/irq", "/proc/bus", "/proc/fs"}

// Entry is how one top-level system path exists on the host.
type Entry struct {
	Path    string
	Symlink string // target when the host path is a symlink
	Dir     bool
}

// HostLayout reads how the system directories exist on this host.
func HostLayout() []Entry {
	var out []Entry
	for _, p := range systemDirs {
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err == nil {
				out = append(out, Entry{Path: p, Symlink: target})
			}
		case fi.IsDir():
			out = append(out, Entry{Path: p, Dir: true})
		}
	}
	return out
}

// Config builds the libcontainer configuration for s. rootfs is the empty
// host directory that becomes "/", shimExe the host path of the sbx binary,
// layout the host's system directories (see [HostLayout]). Symlinks of the
// layout are not part of the config: the caller creates them in rootfs.
func (s *Spec) Config(rootfs, shimExe string, layout []Entry) (*configs.Config, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s.config(rootfs, shimExe, layout)
}

// config is [Spec.Config] of a spec already validated (by [Create]).
func (s *Spec) config(rootfs, shimExe string, layout []Entry) (*configs.Config, error) {
	mounts := []*configs.Mount{
		{Source: "proc", Destination: "/proc", Device: "proc", Flags: unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC},
		{Source: "tmpfs", Destination: "/dev", Device: "tmpfs", Flags: unix.MS_NOSUID | unix.MS_STRICTATIME, Data: "mode=755,size=65536k"},
		{Source: "devpts", Destination: "/dev/pts", Device: "devpts", Flags: unix.MS_NOSUID | unix.MS_NOEXEC, Data: "newinstance,ptmxmode=0666,mode=0620"},
		{Source: "shm", Destination: "/dev/shm", Device: "tmpfs", Flags: unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, Data: "mode=1777,size=65536k"},
		{Source: "mqueue", Destination: "/dev/mqueue", Device: "mqueue", Flags: unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC},
	}
	var binds []*configs.Mount
	for _, e := range layout {
		if e.Dir {
			binds = append(binds, bindMount(e.Path, e.Path, false))
		}
	}
	tmpData := "mode=1777"
	if s.TmpBytes > 0 {
		tmpData += ",size=" + strconv.FormatInt(s.TmpBytes, 10)
	}
	binds = append(binds,
		&configs.Mount{Source: "tmpfs", Destination: "/tmp", Device: "tmpfs", Flags: unix.MS_NOSUID | unix.MS_NODEV, Data: tmpData},
		bindMount(s.Home, s.HomeInside, true),
		bindMount(s.Workspace, s.Workspace, s.Write),
	)
	// The pins come before the protected entries below them (the sort
	// below is by depth), so a pin's own copy of the host's tree is
	// covered by the read-only entries mounted onto it.
	for _, p := range s.Pinned {
		binds = append(binds, bindMount(p, p, true))
	}
	for _, p := range s.Protected {
		binds = append(binds, bindMount(p, p, false))
	}
	for _, p := range s.ReadOnly {
		binds = append(binds, bindMount(p, p, false))
	}
	for _, p := range s.ReadWrite {
		binds = append(binds, bindMount(p, p, true))
	}
	for _, b := range s.RunBinds {
		binds = append(binds, bindMount(b.Source, b.Dest, true))
	}
	if s.ResolvConf != "" {
		if fi, err := os.Lstat("/etc/resolv.conf"); err == nil && fi.Mode().IsRegular() {
			binds = append(binds, bindMount(s.ResolvConf, "/etc/resolv.conf", false))
		}
	}
	binds = append(binds, &configs.Mount{
		Source: shimExe, Destination: ShimPath, Device: "bind",
		Flags: unix.MS_BIND | unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV,
	})
	// Parents before children; among equals keep the order above, so the
	// workspace and explicit mounts win over the home and /tmp.
	sort.SliceStable(binds, func(i, j int) bool { return depth(binds[i].Destination) < depth(binds[j].Destination) })
	mounts = append(mounts, binds...)
	// Masks last: over whatever mount shows their path (--mask).
	hidden, err := s.hiddenMounts()
	if err != nil {
		return nil, err
	}
	mounts = append(mounts, hidden...)

	var rules []*devconfig.Rule
	for _, d := range specconv.AllowedDevices {
		rules = append(rules, &d.Rule)
	}
	cg := &cgroups.Cgroup{
		Path: "/" + filepath.Join(CgroupParent, s.WallGroup, s.ID),
		Resources: &cgroups.Resources{
			Devices: rules,
		},
	}
	if m := s.Limits.MemoryBytes; m > 0 {
		cg.Resources.Memory = m
		cg.Resources.MemorySwap = m
	}
	if c := s.Limits.CPUs; c > 0 {
		cg.Resources.CpuPeriod = 100000
		cg.Resources.CpuQuota = int64(c * 100000)
	}
	if p := s.Limits.Pids; p > 0 {
		cg.Resources.PidsLimit = &p
	}
	var masked []string
	for _, p := range MaskedPaths {
		if strings.HasPrefix(p, "/proc/") {
			masked = append(masked, p)
		} else if _, err := os.Lstat(p); err == nil {
			masked = append(masked, p)
		}
	}
	masked = append(masked, s.Masked...)
	opts := s.seccompOptions()
	// Rootless, the shim starts the program in a user namespace of its
	// own and stacks the default filter on it (see [UserNS]).
	opts.AllowNewUser = s.Rootless
	filter, err := SeccompWith(opts)
	if err != nil {
		return nil, err
	}
	cfg := &configs.Config{
		Rootfs:            rootfs,
		Readonlyfs:        true,
		RootPropagation:   unix.MS_PRIVATE | unix.MS_REC,
		Mounts:            mounts,
		Devices:           specconv.AllowedDevices,
		Hostname:          Hostname,
		ParentDeathSignal: int(unix.SIGKILL),
		Namespaces: configs.Namespaces{
			{Type: configs.NEWNS}, {Type: configs.NEWPID}, {Type: configs.NEWIPC},
			{Type: configs.NEWUTS}, {Type: configs.NEWNET}, {Type: configs.NEWCGROUP},
		},
		Networks:        []*configs.Network{{Type: "loopback", Address: "127.0.0.1/0", Gateway: "localhost"}},
		Capabilities:    &configs.Capabilities{},
		NoNewPrivileges: true,
		NoNewKeyring:    true,
		Cgroups:         cg,
		MaskPaths:       masked,
		ReadonlyPaths:   readonlyProc,
		Seccomp:         filter,
		Umask:           s.Umask,
		Rlimits: []configs.Rlimit{
			{Type: unix.RLIMIT_CORE, Hard: 0, Soft: 0},
		},
	}
	if s.HostNetwork {
		cfg.Namespaces.Remove(configs.NEWNET)
		cfg.Networks = nil
	}
	if s.Rootless {
		s.rootlessConfig(cfg)
	}
	return cfg, nil
}

// seccompOptions are the options of the program's seccomp filter.
func (s *Spec) seccompOptions() SeccompOptions {
	var o SeccompOptions
	if s.AllowInetSockets || s.Loopback || s.HostNetwork {
		o.SocketFamilies = []int{unix.AF_INET, unix.AF_INET6}
	}
	// Reading the routes and links of the namespace (lo alone, or the
	// host's without the capability to change them) is what npm, pip and
	// getaddrinfo's AI_ADDRCONFIG do first.
	o.NetlinkRoute = s.Loopback || s.HostNetwork
	return o
}

// bindMount is a recursive bind of src at dst, read-only (recursively, via
// mount_setattr) unless rw. Binds never carry setuid or device nodes.
func bindMount(src, dst string, rw bool) *configs.Mount {
	m := &configs.Mount{
		Source: src, Destination: dst, Device: "bind",
		Flags: unix.MS_BIND | unix.MS_REC | unix.MS_NOSUID | unix.MS_NODEV,
	}
	if !rw {
		m.Flags |= unix.MS_RDONLY
		m.RecAttr = &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	}
	return m
}

func depth(p string) int {
	p = filepath.Clean(p)
	if p == "/" {
		return 0
	}
	return strings.Count(p, "/")
}

// prepareRootfs lays the symlinks of layout into the empty rootfs dir.
func prepareRootfs(rootfs string, layout []Entry) error {
	for _, e := range layout {
		if e.Symlink == "" {
			continue
		}
		if err := os.Symlink(e.Symlink, filepath.Join(rootfs, e.Path)); err != nil {
			return fmt.Errorf("create %s symlink in rootfs: %w", e.Path, err)
		}
	}
	return nil
}
