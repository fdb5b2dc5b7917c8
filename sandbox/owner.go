package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/opencontainers/runc/libcontainer"
)

// The owner file of a run dir records the sbx process that created it (pid
// and start time, so a reused pid is not mistaken for the owner).
const ownerFile = "owner"

func writeOwner(runDir string) error {
	start, err := procStart(os.Getpid())
	if err != nil {
		return err
	}
	data := fmt.Sprintf("%d %d\n", os.Getpid(), start)
	if err := os.WriteFile(filepath.Join(runDir, ownerFile), []byte(data), 0o600); err != nil {
		return fmt.Errorf("write owner record: %w", err)
	}
	return nil
}

// procStart returns the start time (field 22 of /proc/pid/stat) of pid.
func procStart(pid int) (uint64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("read process start time: %w", err)
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("read process start time: malformed stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, errors.New("read process start time: malformed stat")
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// ownerAlive reports whether the sbx process recorded in runDir still runs.
func ownerAlive(runDir string) bool {
	data, err := os.ReadFile(filepath.Join(runDir, ownerFile))
	if err != nil {
		return false
	}
	var pid int
	var start uint64
	if _, err := fmt.Sscanf(string(data), "%d %d", &pid, &start); err != nil {
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
