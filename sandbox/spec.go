package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/sbx-sandbox/sbx/internal/runid"
)

// Limits are the cgroup limits of one sandbox. Zero means "no limit" for
// each field; sbx's CLI always fills them (512 MiB, 1 CPU, 256 PIDs).
type Limits struct {
	MemoryBytes int64   // memory.max / memory.limit_in_bytes, swap included
	CPUs        float64 // CPU bandwidth in cores (quota/period)
	Pids        int64   // pids.max
}

// Spec describes one sandbox: what the program sees and what it may use.
// All paths are absolute. Host paths of mounts are also their paths inside
// the sandbox, except the home, which is mounted at HomeInside.
type Spec struct {
	// ID names the sandbox (state dir, cgroup); it must match
	// ^[A-Za-z0-9._-]+$ and not be "." or "..".
	ID string
	// Args is the program and its arguments. Args[0] is looked up on the
	// PATH of Env inside the sandbox by the shim.
	Args []string
	// Env is the complete environment of the program.
	Env []string
	// Cwd is the working directory inside the sandbox.
	Cwd string

	// Workspace is the host directory mounted at its own path; Write makes
	// it writable.
	Workspace string
	Write     bool
	// Home is the host directory mounted read-write at HomeInside.
	Home       string
	HomeInside string
	// Protected are paths inside the writable workspace or a ReadWrite
	// path, each bind-mounted read-only onto itself (git hooks, rc
	// files: see protect.ProtectedNames).
	Protected []string
	// Pinned are directories inside the writable workspace or a
	// ReadWrite path, each bind-mounted writable onto itself: a mount
	// point cannot be renamed or removed (EBUSY), so the directories
	// above a protected entry keep their names.
	Pinned []string
	// ReadOnly and ReadWrite are extra host paths mounted at their own path.
	ReadOnly  []string
	ReadWrite []string
	// RunBinds are the run's own state (staged files, --rw file copies:
	// see runner's run dir), each bound writable below HomeInside at a
	// path other than its host path. Other runs never see them.
	RunBinds []Bind
	// TmpBytes caps the tmpfs at /tmp.
	TmpBytes int64

	// UID and GID the program runs as (host ids; sbx does not map users
	// when it runs as root).
	UID, GID int
	Limits   Limits
	// Terminal gives the program a new pty as its stdin/stdout/stderr.
	Terminal bool
	// Umask is the program's umask (the caller's, so files come out with
	// the modes they would outside); nil means libcontainer's 0022.
	Umask *uint32
	// AllowInetSockets lets seccomp pass socket(AF_INET/AF_INET6) through
	// to the cgroup BPF wall, which denies them and reports each denial;
	// without it seccomp refuses every family but AF_UNIX itself.
	AllowInetSockets bool
	// Landlock turns on the Landlock file tier (see [FilePolicy]).
	Landlock bool
	// Masked are more paths hidden like [MaskedPaths] (files become
	// /dev/null, directories an empty read-only tmpfs), e.g. [RootOnly]
	// of /etc for a program that runs as uid 0. Each must exist.
	Masked []string
	// Hidden are the paths of sbx run --mask (see [Hidden]); HiddenFile
	// is the host's empty file of mode 0000 mounted over masked files.
	Hidden     []Hidden
	HiddenFile string
	// HostNetwork shares the host's network namespace instead of an
	// empty one, and leaves TCP out of the Landlock policy (sbx run --net
	// host: no network isolation at all).
	HostNetwork bool
	// Loopback lets the program use the sandbox's own network namespace,
	// which holds nothing but lo (sbx run --net loopback): seccomp lets
	// AF_INET and AF_INET6 sockets through (rootless too, where the
	// namespace itself is the wall; as root the cgroup BPF wall limits
	// them to loopback and reports the rest), and Landlock leaves TCP bind
	// and connect unrestricted (no port can lead out of the namespace).
	Loopback bool
	// ResolvConf, if set, is a host file bound read-only over the
	// sandbox's /etc/resolv.conf (when the host's is a regular file; a
	// symlink into /run dangles inside, and libc then asks 127.0.0.1
	// anyway): a resolver the sandbox can reach, so that a lookup fails at
	// once instead of waiting on one it cannot.
	ResolvConf string
	// ProxyPort is the TCP port of sbx's egress proxy on the sandbox's
	// loopback (0: none); the Landlock tier lets connects to it through.
	ProxyPort uint16
	// Rootless builds the sandbox as an ordinary user: a user namespace
	// maps container id 0 to UID/GID (which must then be the caller's own
	// ids), and the program runs as them. See rootless.go.
	Rootless bool
	// Cgroup is, for a rootless sandbox, the cgroup (a path below the
	// cgroup2 mount) to create in a subtree delegated to the user; empty
	// means there is none, and Limits are applied as rlimits instead.
	Cgroup string
	// WallGroup is, for a root sandbox, the cgroup directory below
	// [CgroupParent] that holds its cgroup: <root>/sbx/<WallGroup>/<ID>.
	// sbx puts there the name of its network wall's build
	// (netwall.WallID), whose programs wall in exactly the runs under it,
	// so two sbx builds in use at once never wall in each other's runs.
	// It must start with [WallGroupPrefix]; empty means directly below
	// CgroupParent (no wall build's).
	WallGroup string
	// Shim is passed to the shim inside the sandbox (see [ShimConfig]).
	Shim ShimConfig
}

// ValidID reports whether id can name a sandbox: it becomes a directory name,
// so it is rejected, never sanitized.
func ValidID(id string) error {
	if !runid.Valid(id) {
		return fmt.Errorf("invalid sandbox id %q: must match ^[A-Za-z0-9._-]+$ and not be . or ..", id)
	}
	return nil
}

// ValidWallGroup reports whether name can be a [Spec.WallGroup]:
// [WallGroupPrefix] followed by one or more characters a run id may have.
func ValidWallGroup(name string) bool {
	rest, ok := strings.CutPrefix(name, WallGroupPrefix)
	return ok && rest != "" && runid.Valid(rest)
}

// Validate checks the spec for what would make the libcontainer config
// unsafe or meaningless. It does not touch the disk.
func (s *Spec) Validate() error {
	var errs []error
	if err := ValidID(s.ID); err != nil {
		errs = append(errs, err)
	}
	if len(s.Args) == 0 || s.Args[0] == "" {
		errs = append(errs, errors.New("no command given"))
	}
	for name, p := range map[string]string{"workspace": s.Workspace, "home": s.Home, "home inside": s.HomeInside, "cwd": s.Cwd} {
		if !isCleanAbs(p) {
			errs = append(errs, fmt.Errorf("%s %q is not a clean absolute path", name, p))
		}
	}
	for _, p := range append(append([]string{}, s.ReadOnly...), s.ReadWrite...) {
		if !isCleanAbs(p) {
			errs = append(errs, fmt.Errorf("mount %q is not a clean absolute path", p))
		} else if p == "/" {
			errs = append(errs, errors.New("mount of / is not allowed"))
		}
	}
	for _, b := range s.RunBinds {
		if !isCleanAbs(b.Source) || !isCleanAbs(b.Destination) || b.Destination == s.HomeInside || !strings.HasPrefix(b.Destination, s.HomeInside+"/") || !b.Writable {
			errs = append(errs, fmt.Errorf("run bind %q -> %q: want clean absolute paths, writable, the destination below the home", b.Source, b.Destination))
		}
	}
	for _, p := range s.Protected {
		if !s.insideWritable(p) {
			errs = append(errs, fmt.Errorf("protected path %q is not inside the writable workspace or a read-write path", p))
		}
	}
	for _, p := range s.Pinned {
		if !s.insideWritable(p) {
			errs = append(errs, fmt.Errorf("pinned directory %q is not inside the writable workspace or a read-write path", p))
		}
	}
	if s.Workspace == "/" {
		errs = append(errs, errors.New("workspace / is not allowed"))
	}
	for _, reserved := range []string{"/proc", "/dev", "/.sbx"} {
		for _, p := range append(append([]string{s.Workspace, s.HomeInside}, s.ReadOnly...), s.ReadWrite...) {
			if p == reserved || strings.HasPrefix(p, reserved+"/") {
				errs = append(errs, fmt.Errorf("path %s lies in %s, which sbx provides itself", p, reserved))
			}
		}
	}
	if s.Limits.MemoryBytes < 0 || s.Limits.CPUs < 0 || s.Limits.Pids < 0 {
		errs = append(errs, errors.New("limits must not be negative"))
	}
	if s.Cgroup != "" && (!s.Rootless || !isCleanAbs(s.Cgroup) || s.Cgroup == "/") {
		errs = append(errs, fmt.Errorf("cgroup %q: want a clean absolute path below the cgroup2 mount, for a rootless sandbox", s.Cgroup))
	}
	if s.WallGroup != "" && (s.Rootless || !ValidWallGroup(s.WallGroup)) {
		errs = append(errs, fmt.Errorf("wall group %q: want %s followed by an id's characters, for a root sandbox", s.WallGroup, WallGroupPrefix))
	}
	if s.UID < 0 || s.GID < 0 {
		errs = append(errs, errors.New("uid and gid must not be negative"))
	}
	return errors.Join(errs...)
}

// insideWritable reports whether p is a clean absolute path strictly
// inside a writable mount of a host path: its nearest mount among the
// workspace, ReadOnly and ReadWrite (the last one listed at the same
// path, as Config mounts them) is writable and is not p itself. A
// Protected or Pinned path must be one: a pin is a writable mount, so one
// inside a read-only mount would open it.
func (s *Spec) insideWritable(p string) bool {
	if !isCleanAbs(p) {
		return false
	}
	mounts := map[string]bool{s.Workspace: s.Write}
	for _, m := range s.ReadOnly {
		mounts[m] = false
	}
	for _, m := range s.ReadWrite {
		mounts[m] = true
	}
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		if writable, ok := mounts[d]; ok {
			_, self := mounts[p]
			return writable && !self
		}
		if d == "/" {
			return false
		}
	}
}

func isCleanAbs(p string) bool {
	return filepath.IsAbs(p) && filepath.Clean(p) == p
}

// Hostname is every sandbox's hostname (its own UTS namespace).
const Hostname = "sbx"
