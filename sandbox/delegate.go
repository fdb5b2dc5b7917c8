package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/opencontainers/cgroups"
	"github.com/sbx-sandbox/sbx/internal/cgroup2"
	"golang.org/x/sys/unix"
)

// Delegation is a cgroup2 subtree an ordinary user may create cgroups in
// (systemd's user@UID.service, delegated to the user's service manager).
type Delegation struct {
	// Dir is the subtree's directory on the host (below Mount).
	Dir string
	// Mount is where the cgroup2 hierarchy is mounted.
	Mount string
	// Controllers are the controllers the subtree offers its children.
	Controllers []string
}

// CgroupFor returns the cgroup path (relative to the cgroup2 mount, as
// [Spec.Cgroup] wants it) of sandbox id inside the delegated subtree.
func (d Delegation) CgroupFor(id string) string {
	rel := strings.TrimPrefix(d.Dir, d.Mount)
	return filepath.Join("/", rel, CgroupParent, id)
}

// Has reports whether the subtree offers every controller of names.
func (d Delegation) Has(names ...string) bool {
	for _, n := range names {
		found := false
		for _, c := range d.Controllers {
			found = found || c == n
		}
		if !found {
			return false
		}
	}
	return true
}

// FindDelegation looks for a cgroup2 subtree delegated to uid that the
// calling process can create its sandboxes' cgroups in: the user@UID.service
// cgroup on the path of self (/proc/self/cgroup as
// [cgroups.ParseCgroupFile] reads it: cgroup2's path under the key ""),
// below mount, which must be the only (unified) cgroup hierarchy: on a
// hybrid host libcontainer manages the v1 controllers, which are never
// delegated. It returns an error saying why there is none.
func FindDelegation(mount string, unified bool, selfCgroups map[string]string, uid int) (Delegation, error) {
	if !unified {
		return Delegation{}, errors.New("cgroup v1 (hybrid) hierarchy: controllers are not delegated to users")
	}
	self := selfCgroups[""]
	if self == "" {
		return Delegation{}, errors.New("no cgroup2 entry in /proc/self/cgroup")
	}
	unit := "user@" + strconv.Itoa(uid) + ".service"
	before, _, ok := strings.Cut(self+"/", "/"+unit+"/")
	if !ok {
		return Delegation{}, fmt.Errorf("not in a systemd user session (no %s in cgroup %s)", unit, self)
	}
	dir := filepath.Join(mount, before, unit)
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return Delegation{}, fmt.Errorf("cgroup %s: %w", dir, err)
	}
	if int(st.Uid) != uid {
		return Delegation{}, fmt.Errorf("cgroup %s is not delegated to uid %d (owner %d)", dir, uid, st.Uid)
	}
	for _, f := range []string{"", "cgroup.procs", "cgroup.subtree_control"} {
		if err := unix.Access(filepath.Join(dir, f), unix.W_OK); err != nil {
			return Delegation{}, fmt.Errorf("cgroup %s is not delegated: %s not writable: %w", dir, filepath.Join(dir, f), err)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return Delegation{}, fmt.Errorf("cgroup %s: %w", dir, err)
	}
	return Delegation{Dir: dir, Mount: mount, Controllers: strings.Fields(string(data))}, nil
}

// HostDelegation is [FindDelegation] for the calling process on this host.
func HostDelegation() (Delegation, error) {
	mount, err := cgroup2.Mount()
	if err != nil {
		return Delegation{}, err
	}
	self, err := cgroups.ParseCgroupFile("/proc/self/cgroup")
	if err != nil {
		return Delegation{}, fmt.Errorf("read own cgroup: %w", err)
	}
	return FindDelegation(mount, mount == "/sys/fs/cgroup", self, os.Geteuid())
}
