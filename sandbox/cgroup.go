package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Cgroup2Mount returns where the cgroup2 hierarchy is mounted: /sys/fs/cgroup
// on a cgroup2-only host, /sys/fs/cgroup/unified on a hybrid one. cgroup BPF
// programs attach there.
func Cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("read mountinfo: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent maj:min root mountpoint opts ... - fstype source super
		fields := strings.Fields(sc.Text())
		for i, fld := range fields {
			if fld == "-" && i+1 < len(fields) && fields[i+1] == "cgroup2" && len(fields) > 4 {
				return fields[4], nil
			}
		}
	}
	return "", errors.New("no cgroup2 hierarchy is mounted (cgroup BPF needs one; mount it with: mount -t cgroup2 none /sys/fs/cgroup/unified)")
}

// Cgroup2Dir returns the cgroup2 directory of sandbox id.
func Cgroup2Dir(id string) (string, error) {
	m, err := Cgroup2Mount()
	if err != nil {
		return "", err
	}
	return filepath.Join(m, CgroupParent, id), nil
}

// removeCgroups kills what is left in the cgroups of sandbox id in every
// hierarchy and removes them; libcontainer normally does this, this is for
// sandboxes whose state was never written.
func removeCgroups(id string) error {
	dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", CgroupParent, id))
	if d := filepath.Join("/sys/fs/cgroup", CgroupParent, id); isDir(d) {
		dirs = append(dirs, d)
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
		data, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		for _, l := range strings.Fields(string(data)) {
			if pid, e := strconv.Atoi(l); e == nil {
				_ = unix.Kill(pid, unix.SIGKILL)
			}
		}
		if err = unix.Rmdir(dir); err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("remove cgroup %s: %w", dir, err)
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
