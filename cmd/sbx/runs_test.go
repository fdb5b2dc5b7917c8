package main

// Which sandbox a run of the tests created, and whether anything of it is
// left on the host after the run.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/bpf/netwall"
	"github.com/sbx-sandbox/sbx/sandbox"
)

// runRecord is one run directory sbx created, with the sbx process that
// owns it (from its owner record) and that process's ancestors at the time.
type runRecord struct {
	id        string
	pid       int
	ancestors []int
	seen      time.Time
}

// runWatcher learns, through inotify, the id of every sandbox created while
// the tests run, and which sbx process created it. Tests use it to check
// that exactly that sandbox's state and cgroups are gone after the run, even
// while other sandboxes run in parallel.
type runWatcher struct {
	dir  string
	mu   sync.Mutex
	recs []runRecord
	err  error
}

func startRunWatcher(dir string) (*runWatcher, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("inotify_init1", err)
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CREATE|unix.IN_MOVED_TO); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("inotify_add_watch", err)
	}
	w := &runWatcher{dir: dir}
	go w.loop(fd)
	return w, nil
}

func (w *runWatcher) loop(fd int) {
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			w.fail(fmt.Errorf("read inotify events: %w", err))
			return
		}
		// struct inotify_event: wd, mask, cookie, len (4 bytes each), name.
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			mask := binary.NativeEndian.Uint32(buf[off+4:])
			nameLen := int(binary.NativeEndian.Uint32(buf[off+12:]))
			name := string(bytes.TrimRight(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+nameLen], "\x00"))
			off += unix.SizeofInotifyEvent + nameLen
			if mask&unix.IN_Q_OVERFLOW != 0 {
				w.fail(errors.New("inotify queue overflow: runs may be unattributed"))
			}
			// ".new-ID-N" is a run dir being assembled; it is renamed
			// to ID (IN_MOVED_TO), which is what counts.
			if mask&unix.IN_ISDIR != 0 && name != "" && !strings.HasPrefix(name, ".") {
				// The owner record is there when the dir appears (it
				// is renamed into place whole): read it right away,
				// before a short run can remove it, and keep
				// trying in the background only if that fails.
				now := time.Now()
				if !w.tryAttribute(name, now) {
					go w.attribute(name, now)
				}
			}
		}
	}
}

func (w *runWatcher) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = err
	}
}

// tryAttribute reads the owner record of run id once and, if it is there,
// records the owner and its ancestors.
func (w *runWatcher) tryAttribute(id string, seen time.Time) bool {
	data, err := os.ReadFile(filepath.Join(w.dir, id, "owner"))
	if err != nil {
		return false
	}
	var pid int
	var start uint64
	if _, err := fmt.Sscanf(string(data), "%d %d", &pid, &start); err != nil {
		return false
	}
	w.mu.Lock()
	w.recs = append(w.recs, runRecord{id: id, pid: pid, ancestors: ancestors(pid), seen: seen})
	w.mu.Unlock()
	return true
}

// attribute retries tryAttribute until the record is there or the run
// dir is gone.
func (w *runWatcher) attribute(id string, seen time.Time) {
	for i := 0; i < 1000; i++ {
		if w.tryAttribute(id, seen) {
			return
		}
		if _, err := os.Stat(filepath.Join(w.dir, id)); errors.Is(err, os.ErrNotExist) {
			return // gone before its owner could be read
		}
		time.Sleep(time.Millisecond)
	}
}

// ancestors returns the parent chain of pid (without pid itself).
func ancestors(pid int) []int {
	var out []int
	for p := pid; p > 1 && len(out) < 64; {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat")
		if err != nil {
			break
		}
		s := string(data)
		i := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[i+1:])
		if i < 0 || len(f) < 2 {
			break
		}
		pp, err := strconv.Atoi(f[1])
		if err != nil {
			break
		}
		out = append(out, pp)
		p = pp
	}
	return out
}

// ids returns the ids of the runs created since start by pid or by a
// descendant of pid, waiting up to wait for at least one to show up.
func (w *runWatcher) ids(pid int, start time.Time, wait time.Duration) ([]string, error) {
	deadline := time.Now().Add(wait)
	for {
		w.mu.Lock()
		var ids []string
		for _, r := range w.recs {
			if r.seen.Before(start) {
				continue
			}
			if r.pid == pid || slices.Contains(r.ancestors, pid) {
				ids = append(ids, r.id)
			}
		}
		err := w.err
		w.mu.Unlock()
		if len(ids) > 0 || err != nil || time.Now().After(deadline) {
			return ids, err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// rootCgroup is the cgroup of root's sandbox id relative to a hierarchy's
// root: in the wall group of the sbx build under test (the test binary's
// tree is sbx's, so its network wall is the same build).
func rootCgroup(id string) string {
	return filepath.Join(sandbox.CgroupParent, netwall.WallID(), id)
}

// sandboxCgroups lists the cgroup directories of sandbox id in every
// hierarchy: below /sys/fs/cgroup itself (cgroup2 only) and each of its
// hierarchies (v1 controllers, unified), directly below sbx (rootless
// runs without a delegated cgroup, when cgroupfs lets them, and sbx
// builds before wall groups) and in any build's wall group.
func sandboxCgroups(parent, id string) []string {
	var found []string
	for _, rel := range []string{filepath.Join(parent, id), filepath.Join(parent, sandbox.WallGroupPrefix+"*", id)} {
		for _, pattern := range []string{filepath.Join(cgroupRoot, rel), filepath.Join(cgroupRoot, "*", rel)} {
			m, _ := filepath.Glob(pattern)
			found = append(found, m...)
		}
	}
	return found
}

// leftovers lists what remains on the host of sandbox id: its run dir,
// libcontainer state, cgroup directories in every hierarchy (and, for a
// rootless run, in the user's delegated subtree; without one a rootless
// run makes no cgroup at all), throwaway home.
func leftovers(id string) []string {
	var found []string
	for _, p := range []string{
		filepath.Join(stateRoot, "run", id),
		filepath.Join(stateRoot, "lc", id),
	} {
		if exists(p) {
			found = append(found, p)
		}
	}
	// The run's own state (staged files, --rw copies) stays only while a
	// failed copy-back waits for a retry by a later run.
	if !exists(filepath.Join(stateRoot, "staging", id+".json")) {
		for _, p := range []string{filepath.Join(stateRoot, "runs", id), filepath.Join(stateRoot, "runs", id+".lock")} {
			if exists(p) {
				found = append(found, p)
			}
		}
	}
	found = append(found, sandboxCgroups(sandbox.CgroupParent, id)...)
	if rootless() && asUser.delegated != "" {
		// The user's sandboxes' cgroups lie in its delegated subtree
		// (and nowhere else: the checks above find none of them).
		if p := filepath.Join(asUser.delegated, "sbx", id); exists(p) {
			found = append(found, p)
		}
	}
	homes, _ := filepath.Glob(filepath.Join(os.TempDir(), "sbx-home-"+id+"-*"))
	return append(found, homes...)
}

// assertNoLeftovers fails t if anything of sandbox id is left on the host.
func assertNoLeftovers(t *testing.T, id string) {
	t.Helper()
	if l := leftovers(id); len(l) > 0 {
		t.Errorf("sandbox %s left behind: %s", id, strings.Join(l, ", "))
	}
}
