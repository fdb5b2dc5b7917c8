package runner

import (
	"fmt"
	"path/filepath"

	"github.com/moby/sys/mountinfo"
	"github.com/sbx-sandbox/sbx/hostfs"
	"github.com/sbx-sandbox/sbx/internal/refuse"
	"golang.org/x/sys/unix"
)

// A host path given to sbx (workspace, --ro, --rw, --home, and sbx exec's
// workspace) is mounted into the sandbox. Bad input there is an
// escalation, not a typo: --home /proc showed the host's procfs
// read-write, a writable workspace over sbx's state dir let the program
// forge the next run's copy-back manifest, /sys/fs/cgroup let it raise its
// own limits, a workspace of ~ showed ~/.ssh. checkHostPath refuses all of
// these, on the host source after symlinks are resolved, before anything
// is written to disk; run and exec both come through here.

// pseudoFS are the file systems that are kernel interfaces, not files:
// never mounted into a sandbox from the host.
var pseudoFS = map[string]bool{
	"proc": true, "sysfs": true, "devtmpfs": true, "devpts": true,
	"cgroup": true, "cgroup2": true, "bpf": true, "securityfs": true,
	"debugfs": true, "tracefs": true, "configfs": true, "pstore": true,
	"efivarfs": true, "fusectl": true, "binfmt_misc": true, "mqueue": true,
	"nsfs": true, "hugetlbfs": true, "autofs": true, "rpc_pipefs": true,
	"selinuxfs": true,
}

// pseudoMagic are the statfs types of pseudoFS, for the file system a path
// itself lies on.
var pseudoMagic = map[int64]bool{
	unix.PROC_SUPER_MAGIC: true, unix.SYSFS_MAGIC: true, unix.DEVPTS_SUPER_MAGIC: true,
	unix.CGROUP_SUPER_MAGIC: true, unix.CGROUP2_SUPER_MAGIC: true, unix.BPF_FS_MAGIC: true,
	unix.SECURITYFS_MAGIC: true, unix.DEBUGFS_MAGIC: true, unix.TRACEFS_MAGIC: true,
	unix.PSTOREFS_MAGIC: true, unix.EFIVARFS_MAGIC: true, unix.NSFS_MAGIC: true,
	unix.HUGETLBFS_MAGIC: true, unix.SELINUX_MAGIC: true, 0x62656570: true, // configfs
	0x65735543: true, // fusectl
	0x42494e4d: true, // binfmt_misc
	0x19800202: true, // mqueue
}

// pseudoDirs are where the kernel's interfaces live, whatever is mounted.
var pseudoDirs = []string{"/proc", "/sys", "/dev"}

// systemDirs may never be writable in a sandbox (workspace with --write,
// --rw, --home), nor may a directory that contains one.
var systemDirs = []string{
	"/bin", "/boot", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/sbin", "/usr",
	"/run", "/var/lib", "/var/log", "/var/cache", "/var/spool", "/var/mail", "/var/backups",
}

// hostPath is one host path a run mounts.
type hostPath struct {
	field    string // "workspace", "--ro", "--rw", "--home"
	path     string // resolved (no symlinks): the held descriptor's real path
	writable bool
	// fsType is the statfs magic of the held descriptor's file system
	// (0: unknown, then statfs(2) of path is asked).
	fsType int64
}

// hostPolicy is what checkHostPath compares against.
type hostPolicy struct {
	stateDir string // sbx's state dir, resolved as far as it exists
	userHome string // the invoking user's home, resolved ("" if none)
	mounts   []*mountinfo.Info
}

func newHostPolicy(stateDir, userHome string) (hostPolicy, error) {
	types := make([]string, 0, len(pseudoFS))
	for t := range pseudoFS {
		types = append(types, t)
	}
	// Only the pseudo-filesystem mounts are kept (check asks for no other).
	mounts, err := mountinfo.GetMounts(mountinfo.FSTypeFilter(types...))
	if err != nil {
		return hostPolicy{}, fmt.Errorf("read the mount table: %w", err)
	}
	p := hostPolicy{stateDir: hostfs.ResolvePrefix(stateDir), mounts: mounts}
	if userHome != "" && userHome != "/" {
		p.userHome = hostfs.ResolvePrefix(userHome)
	}
	return p, nil
}

// check refuses hp when it could hand the sandbox the host; the error is a
// *refuse.Error (sbx run exits 125 with it, sbx exec rejects).
func (p hostPolicy) check(hp hostPath) error {
	path := hp.path
	refuse := func(why, fix string) error {
		return &refuse.Error{Field: hp.field, Reason: fmt.Sprintf("%s %s: %s (%s)", hp.field, path, why, fix)}
	}
	if path == "/" {
		return refuse("the whole host cannot be mounted into a sandbox", "pick a project directory")
	}
	if hostfs.Under(path, p.stateDir) || hostfs.Under(p.stateDir, path) {
		return refuse("it is or contains sbx's own state directory "+p.stateDir, "pick a directory outside it")
	}
	for _, d := range pseudoDirs {
		if hostfs.Under(path, d) || hostfs.Under(d, path) {
			return refuse("it is or contains "+d+", a kernel interface", "pick a directory of ordinary files")
		}
	}
	fsType := hp.fsType
	if fsType == 0 {
		var st unix.Statfs_t
		if err := unix.Statfs(path, &st); err == nil {
			fsType = int64(st.Type)
		}
	}
	if pseudoMagic[fsType] {
		return refuse(fmt.Sprintf("it lies on a kernel pseudo-filesystem (type %#x)", fsType), "pick a directory of ordinary files")
	}
	for _, m := range p.mounts {
		if pseudoFS[m.FSType] && hostfs.Under(m.Mountpoint, path) {
			return refuse("it contains "+m.Mountpoint+", a "+m.FSType+" mount", "pick a directory of ordinary files")
		}
	}
	if hp.writable {
		for _, d := range systemDirs {
			if hostfs.Under(path, d) || hostfs.Under(d, path) {
				return refuse("it is or contains the system directory "+d+", which a sandbox may not write", "mount it read-only, or pick another directory")
			}
		}
	}
	// A request's ro paths are chosen by a model: held to the workspace's
	// rule (sbx run's --ro is the user's own choice).
	if (hp.field == "workspace" || hp.field == "ro") && p.userHome != "" && hostfs.Under(p.userHome, path) {
		what := "your home directory"
		if path != p.userHome {
			what = "an ancestor of your home directory " + p.userHome
		}
		return refuse("it is "+what+": the program would see all of it (~/.ssh, tokens, other projects)", "pick a project directory")
	}
	return nil
}

// realPath is p with symlinks resolved, or p when that fails.
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}
