package policysrc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/hostfs"
)

// A Grant is a tree a run could write: a workspace run with --write, an
// --rw path, the run's home. The registry of grants lives in sbx's state
// directory (never shown in a sandbox), so that a later run can tell a
// file a sandbox could have written (changed while a grant of a tree
// holding it lasted) from one the user wrote.
type Grant struct {
	hostfs.FileID
	// Birth is the tree's creation time (see link.birth; 0: unknown).
	Birth int64  `json:"birth,omitempty"`
	Path  string `json:"path"`
	// Start and End are when the grant began and ended (Unix
	// nanoseconds); End is 0 while the run lasts.
	Start int64 `json:"start"`
	End   int64 `json:"end,omitempty"`
	// PID and PIDStart identify the sbx process of a run that has not
	// ended (its start time in clock ticks since boot, /proc/PID/stat),
	// so that a run killed before it could record its end is seen to be
	// over.
	PID      int    `json:"pid,omitempty"`
	PIDStart uint64 `json:"pid_start,omitempty"`
}

// Running reports whether g's run has not ended.
func (g Grant) Running() bool { return g.End == 0 }

// maxGrants bounds the registry. Past it, ended grants of the same tree
// are merged into one that spans them all (never narrower), then the
// grants that ended longest ago are dropped: a tree granted that long
// ago, among more than maxGrants others since, is forgotten.
const maxGrants = 2048

// slack widens every grant on both sides: a file's ctime comes from the
// kernel's coarse clock, which lags the clock sbx reads by up to a tick
// (10 ms at HZ=100).
const slack = int64(100 * time.Millisecond)

const grantsFile = "grants.json"

// Record adds a grant of each root, starting now, to the registry in
// stateDir, and returns the function that marks them ended. Roots that
// do not exist are left out.
func Record(stateDir string, roots []string) (func(), error) {
	var mine []Grant
	now := time.Now().UnixNano()
	pidStart, err := procStart(os.Getpid())
	if err != nil {
		return nil, err
	}
	for _, r := range roots {
		f, err := os.OpenFile(r, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		l, err := statLink(int(f.Fd()))
		f.Close()
		if err != nil {
			continue
		}
		mine = append(mine, Grant{FileID: l.id, Birth: l.birth, Path: r, Start: now, PID: os.Getpid(), PIDStart: pidStart})
	}
	if len(mine) == 0 {
		return func() {}, nil
	}
	err = update(stateDir, func(gs []Grant) []Grant { return append(gs, mine...) })
	if err != nil {
		return nil, err
	}
	return func() {
		end := time.Now().UnixNano()
		_ = update(stateDir, func(gs []Grant) []Grant {
			for i, g := range gs {
				if g.Running() && g.PID == os.Getpid() && g.PIDStart == pidStart && g.Start == now {
					gs[i].End = end
				}
			}
			return gs
		})
	}, nil
}

// Load returns the registry in stateDir (none: empty), with the grants
// of runs whose sbx is gone marked ended now (when they ended is not
// known; now is the latest it can have been).
func Load(stateDir string) ([]Grant, error) {
	data, err := os.ReadFile(filepath.Join(stateDir, grantsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the grants of earlier runs: %w", err)
	}
	var gs []Grant
	if err := json.Unmarshal(data, &gs); err != nil {
		return nil, fmt.Errorf("read the grants of earlier runs %s: %w (remove it once no sbx runs)", filepath.Join(stateDir, grantsFile), err)
	}
	now := time.Now().UnixNano()
	for i, g := range gs {
		if g.Running() && !alive(g.PID, g.PIDStart) {
			gs[i].End = now
		}
	}
	return gs, nil
}

// update changes the registry under an exclusive lock.
func update(stateDir string, fn func([]Grant) []Grant) error {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return fmt.Errorf("record the grants of this run: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(stateDir, grantsFile+".lock"), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("record the grants of this run: %w", err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("record the grants of this run: lock: %w", err)
	}
	gs, err := Load(stateDir)
	if err != nil {
		return err
	}
	gs = compact(fn(gs))
	data, err := json.Marshal(gs)
	if err != nil {
		return err
	}
	tmp := filepath.Join(stateDir, grantsFile+".new")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("record the grants of this run: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(stateDir, grantsFile)); err != nil {
		return fmt.Errorf("record the grants of this run: %w", err)
	}
	return nil
}

// compact bounds gs (see maxGrants).
func compact(gs []Grant) []Grant {
	if len(gs) <= maxGrants {
		return gs
	}
	var out []Grant
	type key struct {
		hostfs.FileID
		birth int64
	}
	merged := map[key]int{}
	for _, g := range gs {
		if g.Running() {
			out = append(out, g)
			continue
		}
		k := key{g.FileID, g.Birth}
		if i, ok := merged[k]; ok {
			out[i].Start = min(out[i].Start, g.Start)
			out[i].End = max(out[i].End, g.End)
			continue
		}
		merged[k] = len(out)
		out = append(out, g)
	}
	if len(out) > maxGrants {
		slices.SortStableFunc(out, func(a, b Grant) int {
			return int(max(-1, min(1, endOrNow(b)-endOrNow(a))))
		})
		out = out[:maxGrants]
	}
	return out
}

func endOrNow(g Grant) int64 {
	if g.Running() {
		return time.Now().UnixNano()
	}
	return g.End
}

// Covers reports whether g's run could have written a file with ctime
// ctime (Unix nanoseconds) in its tree.
func (g Grant) Covers(ctime int64) bool {
	return ctime >= g.Start-slack && (g.Running() || ctime <= g.End+slack)
}

// applies reports whether g is a grant of the directory (or file) l: the
// same inode, and, where both creation times are known, the same one (an
// inode number is reused once its file is gone).
func (g Grant) applies(l link) bool {
	return g.FileID == l.id && (g.Birth == 0 || l.birth == 0 || g.Birth == l.birth)
}

// procStart returns the start time of process pid (field 22 of
// /proc/PID/stat).
func procStart(pid int) (uint64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces and ")": the fields follow the last ")".
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// alive reports whether process pid is still the one that started at
// start.
func alive(pid int, start uint64) bool {
	if pid <= 0 {
		return false
	}
	s, err := procStart(pid)
	return err == nil && s == start
}
