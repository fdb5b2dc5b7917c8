package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/system"
	"github.com/sbx-sandbox/sbx/internal/lockfile"
)

// The owner file of a run dir records the sbx process that created it: its
// pid and start time, and the word "flock". The process holds an exclusive
// flock on the record for as long as the sandbox lives. The kernel drops
// that lock when the process dies, however it dies, and before it is
// reaped: a killed sbx that is still a zombie (its killer has not waited
// for it yet) has let go of it, while its pid and start time still match.
// Records without "flock" come from older sbx versions, which are judged by
// pid and start time.
const ownerFile = "owner"

// ownerLock marks records whose liveness is their flock.
const ownerLock = "flock"

// writeOwner writes runDir's owner record and returns it locked; the caller
// keeps it open for the sandbox's life.
func writeOwner(runDir string) (*os.File, error) {
	start, err := procStart(os.Getpid())
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(runDir, ownerFile), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("write owner record: %w", err)
	}
	held, err := lockfile.TryLock(f)
	if err == nil && held {
		err = errors.New("held by another open file")
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock owner record: %w", err)
	}
	if _, err := fmt.Fprintf(f, "%d %d %s\n", os.Getpid(), start, ownerLock); err != nil {
		f.Close()
		return nil, fmt.Errorf("write owner record: %w", err)
	}
	return f, nil
}

// procStart returns the start time (field 22 of /proc/pid/stat, clock
// ticks since boot) of pid.
func procStart(pid int) (uint64, error) {
	st, err := system.Stat(pid)
	if err != nil {
		return 0, fmt.Errorf("read process start time: %w", err)
	}
	return st.StartTime, nil
}

// ownerAlive reports whether the sbx process recorded in runDir still runs.
// An error other than "held" while testing the lock counts as alive: a
// sandbox is never reclaimed on a guess.
func ownerAlive(runDir string) bool {
	f, err := os.Open(filepath.Join(runDir, ownerFile))
	if err != nil {
		return false
	}
	defer f.Close()
	var pid int
	var start uint64
	var kind string
	n, _ := fmt.Fscanf(f, "%d %d %s", &pid, &start, &kind)
	if n == 3 && kind == ownerLock {
		held, err := lockfile.TryLock(f)
		return held || err != nil // taken: the owner is gone (closing f lets go)
	}
	if n < 2 {
		return false
	}
	now, err := procStart(pid)
	return err == nil && now == start
}

// Reclaim destroys the sandboxes of sbx processes that died without tearing
// them down (killed with SIGKILL, say): their processes, cgroups, state and
// rootfs. Sandboxes of live sbx processes are left alone. It returns the ids
// it reclaimed.
func Reclaim(dirs Dirs) ([]string, error) {
	sweepCgroups()
	entries, err := os.ReadDir(filepath.Join(dirs.Root, "run"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	var ids []string
	var errs []error
	for _, e := range entries {
		id := e.Name()
		if strings.HasPrefix(id, ".new-") {
			// A run dir being assembled, or one a killed sbx never
			// finished: only its owner record is inside.
			// Young ones may not have their owner record yet.
			p := filepath.Join(dirs.Root, "run", id)
			if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > time.Minute && !ownerAlive(p) {
				_ = os.RemoveAll(p)
			}
			continue
		}
		if ValidID(id) != nil || ownerAlive(dirs.runDir(id)) {
			continue
		}
		if _, err := os.Lstat(filepath.Join(dirs.runDir(id), ownerFile)); errors.Is(err, os.ErrNotExist) {
			// No owner record: its sbx is removing the run dir (the
			// record goes with it, after the container) since it was
			// listed, or was killed doing so. Nothing of a sandbox is
			// left to reclaim; a stale dir is removed.
			if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > time.Minute {
				_ = os.RemoveAll(dirs.runDir(id))
			}
			continue
		}
		if c, err := libcontainer.Load(dirs.lcRoot(), id); err == nil {
			_ = c.Signal(os.Kill)
			if err := destroyWithRetry(c); err != nil {
				errs = append(errs, fmt.Errorf("reclaim %s: %w", id, err))
				continue
			}
		}
		if err := removeCgroups(id); err != nil {
			errs = append(errs, fmt.Errorf("reclaim %s: %w", id, err))
			continue
		}
		_ = os.RemoveAll(filepath.Join(dirs.lcRoot(), id))
		if err := os.RemoveAll(dirs.runDir(id)); err != nil {
			errs = append(errs, fmt.Errorf("reclaim %s: %w", id, err))
			continue
		}
		ids = append(ids, id)
	}
	return ids, errors.Join(errs...)
}
