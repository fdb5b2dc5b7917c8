package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/bpf"
)

// Cgroup2Mount returns where the cgroup2 hierarchy is mounted: /sys/fs/cgroup
// on a cgroup2-only host, /sys/fs/cgroup/unified on a hybrid one. cgroup BPF
// programs attach there. It is [bpf.Cgroup2Mount], with the fix in the error.
func Cgroup2Mount() (string, error) {
	m, err := bpf.Cgroup2Mount()
	if err != nil {
		return "", fmt.Errorf("%w (cgroup BPF needs a cgroup2 hierarchy; mount one with: mount -t cgroup2 none /sys/fs/cgroup/unified)", err)
	}
	return m, nil
}

// removeCgroups kills what is left in the cgroups of sandbox id in every
// hierarchy and removes them; libcontainer normally does this, this is for
// sandboxes whose state was never written.
func removeCgroups(id string) error {
	var dirs []string
	for _, parent := range []string{CgroupParent, RootlessCgroupParent} {
		m, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", parent, id))
		dirs = append(dirs, m...)
		if d := filepath.Join("/sys/fs/cgroup", parent, id); isDir(d) {
			dirs = append(dirs, d)
		}
	}
	var errs []error
	for _, d := range dirs {
		if err := killAndRemove(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
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

// sweepCgroups removes sandbox cgroups (under CgroupParent, named like a
// run id) that hold no process and are older than staleCgroupAge: what a
// teardown cut short left behind after its run dir was gone, which Reclaim
// (keyed by run dirs) cannot find. A cgroup with a process is never
// touched: it may belong to a run of another state dir.
func sweepCgroups() {
	var dirs []string
	for _, parent := range []string{CgroupParent, RootlessCgroupParent} {
		m, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", parent, "*"))
		n, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", parent, "*"))
		dirs = append(append(dirs, m...), n...)
	}
	for _, d := range dirs {
		if ValidID(filepath.Base(d)) != nil {
			continue
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
}
