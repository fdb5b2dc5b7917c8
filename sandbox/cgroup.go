package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/cgroup2"
)

// removeCgroups kills what is left in the cgroups of sandbox id in every
// hierarchy and removes them; libcontainer normally does this, this is for
// sandboxes whose state was never written. The sandbox may be of any sbx
// build: its cgroup is looked for in every wall group.
func removeCgroups(id string) error {
	var dirs []string
	for _, rel := range []string{
		filepath.Join(CgroupParent, WallGroupPrefix+"*", id),
		filepath.Join(CgroupParent, id),
		filepath.Join(RootlessCgroupParent, id),
	} {
		dirs = append(dirs, cgroupGlob(rel)...)
	}
	var errs []error
	for _, d := range dirs {
		if err := killAndRemove(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// cgroupGlob returns what matches the glob rel (relative to a hierarchy's
// root) in every hierarchy: below /sys/fs/cgroup itself (cgroup2 only) and
// below each /sys/fs/cgroup/<hierarchy> (v1 controllers, unified).
func cgroupGlob(rel string) []string {
	m, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", rel))
	n, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", rel))
	return append(m, n...)
}

func killAndRemove(dir string) error {
	var err error
	for i := 0; i < 50; i++ {
		killProcs(dir)
		if err = unix.Rmdir(dir); err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("remove cgroup %s: %w", dir, err)
}

// killProcs sends SIGKILL to every process listed in the cgroup dir's
// cgroup.procs and reports whether there was none.
func killProcs(dir string) (empty bool) {
	pids, err := cgroups.GetPids(dir)
	for _, pid := range pids {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	return err != nil || len(pids) == 0
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// staleCgroupAge is how old an empty sandbox cgroup without a run must be
// before sweepCgroups removes it: libcontainer fills a new one within
// milliseconds, so a minute leaves every starting run alone.
const staleCgroupAge = time.Minute

// sweepCgroups removes sandbox cgroups (under CgroupParent, in any wall
// group, or directly, named like a run id) that hold no process and are
// older than staleCgroupAge: what a teardown cut short left behind after
// its run dir was gone, which Reclaim (keyed by run dirs) cannot find. A
// cgroup with a process is never touched: it may belong to a run of
// another state dir. A wall group itself is never removed here: the
// network wall of a build removes another build's when it removes that
// build's unused pins (netwall), so no build loses the parent its wall is
// attached to while one of its sbx processes holds it open.
func sweepCgroups() {
	var dirs []string
	for _, rel := range []string{
		filepath.Join(CgroupParent, WallGroupPrefix+"*", "*"),
		filepath.Join(CgroupParent, "*"),
		filepath.Join(RootlessCgroupParent, "*"),
	} {
		dirs = append(dirs, cgroupGlob(rel)...)
	}
	for _, d := range dirs {
		if ValidID(filepath.Base(d)) != nil {
			continue
		}
		if filepath.Base(filepath.Dir(d)) == CgroupParent && ValidWallGroup(filepath.Base(d)) {
			continue // a wall group, not a sandbox's cgroup
		}
		fi, err := os.Stat(d)
		if err != nil || !fi.IsDir() || time.Since(fi.ModTime()) < staleCgroupAge {
			continue
		}
		if pids, err := cgroups.GetPids(d); err != nil || len(pids) != 0 {
			continue
		}
		_ = unix.Rmdir(d) // EBUSY if a child cgroup or a task appeared: left alone
	}
	sweepV1WallGroups()
}

// sweepV1WallGroups removes, on a hybrid host, the copies of wall groups
// in the cgroup v1 hierarchies (libcontainer creates a sandbox's path in
// each) whose cgroup2 wall group is gone: the network wall removes that
// one with its build's unused pins, and the copies follow here. A build
// that starts a run creates its cgroup2 wall group first (runner's
// openNetWall), so its copies are not touched meanwhile; rmdir fails on a
// copy that still holds a sandbox's cgroup.
func sweepV1WallGroups() {
	mnt, err := cgroup2.Mount()
	if err != nil || mnt == "/sys/fs/cgroup" {
		return // cgroup2 only: no v1 copies
	}
	groups, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", CgroupParent, WallGroupPrefix+"*"))
	for _, g := range groups {
		name := filepath.Base(g)
		if !ValidWallGroup(name) || filepath.Dir(filepath.Dir(g)) == mnt || isDir(filepath.Join(mnt, CgroupParent, name)) {
			continue
		}
		_ = unix.Rmdir(g)
	}
}
