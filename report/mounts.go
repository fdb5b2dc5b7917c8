package report

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/bpf/events"
	"github.com/sbx-sandbox/sbx/hostfs"
)

// crossMount reports whether the refused link or rename of e went from one
// mount to another: the kernel's own EXDEV, which programs handle (mv
// copies instead) and which is no denial, unlike Landlock's EXDEV between
// differently ruled directories of one mount. The mounts are looked up in
// the sandbox through its PID 1's root while it runs; once it is gone (a
// short program's last event is often read after it ended), in mounts, the
// sandbox's mount table as it was before the program started (the program
// cannot mount). When neither knows a path, the event is kept.
func crossMount(pid1 uint32, mounts mountTable, e events.Event) bool {
	if e.Errno != unix.EXDEV || e.Syscall == nil || e.Syscall.Path2 == "" || pid1 == 0 {
		return false
	}
	from := e.Path
	if e.OpName() == "rename" {
		from = filepath.Dir(from)
	}
	to := filepath.Dir(e.Syscall.Path2)
	a, ok1 := mountID(pid1, from)
	b, ok2 := mountID(pid1, to)
	if !ok1 || !ok2 {
		a, ok1 = mounts.of(from)
		b, ok2 = mounts.of(to)
	}
	return ok1 && ok2 && a != b
}

// mountTable is a sandbox's mounts: mount points (absolute, as seen inside)
// and their ids, longest mount point first.
type mountTable []mountPoint

type mountPoint struct {
	dir string
	id  uint64
}

// readMountTable reads the mount table of pid (as its /proc/PID/mountinfo
// shows it, relative to its root).
func readMountTable(pid int) (mountTable, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read sandbox mount table: %w", err)
	}
	defer f.Close()
	ms, err := mountinfo.GetMountsFromReader(f, nil)
	if err != nil {
		return nil, fmt.Errorf("read sandbox mount table: %w", err)
	}
	return mountTableOf(ms), nil
}

// parseMountInfo parses mountinfo(5) text (the tests' tables).
func parseMountInfo(data string) mountTable {
	ms, err := mountinfo.GetMountsFromReader(strings.NewReader(data), nil)
	if err != nil {
		return nil
	}
	return mountTableOf(ms)
}

// mountTableOf orders the mounts for lookups, longest mount point first.
// Of mounts stacked on one point, the last listed is the visible one.
func mountTableOf(ms []*mountinfo.Info) mountTable {
	var t mountTable
	seen := map[string]int{}
	for _, m := range ms {
		dir := filepath.Clean(m.Mountpoint)
		if !filepath.IsAbs(dir) {
			continue
		}
		id := uint64(m.ID)
		if i, ok := seen[dir]; ok {
			t[i].id = id
			continue
		}
		seen[dir] = len(t)
		t = append(t, mountPoint{dir, id})
	}
	sort.SliceStable(t, func(i, j int) bool { return len(t[i].dir) > len(t[j].dir) })
	return t
}

// of returns the id of the mount that path (absolute, lexically cleaned; a
// symlink on the way is not followed) lies on.
func (t mountTable) of(path string) (uint64, bool) {
	if !filepath.IsAbs(path) {
		return 0, false
	}
	path = filepath.Clean(path)
	for _, m := range t {
		if hostfs.Under(path, m.dir) {
			return m.id, true
		}
	}
	return 0, false
}

// mountID is the id of the mount that path (absolute, inside the sandbox)
// is on.
func mountID(pid1 uint32, path string) (uint64, bool) {
	if !filepath.IsAbs(path) {
		return 0, false
	}
	var st unix.Statx_t
	p := "/proc/" + strconv.FormatUint(uint64(pid1), 10) + "/root" + path
	if err := unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, unix.STATX_MNT_ID, &st); err != nil {
		return 0, false
	}
	if st.Mask&unix.STATX_MNT_ID == 0 {
		return 0, false
	}
	return st.Mnt_id, true
}
