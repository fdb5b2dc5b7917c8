package home

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sbx-sandbox/sbx/hostfs"
	"github.com/sbx-sandbox/sbx/sandbox"
	"github.com/sbx-sandbox/sbx/stage"
	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/lockfile"
)

// Throwaway homes (--home tmp) live in the temp dir, outside the run dir
// that Reclaim removes, and a kill at the wrong moment (after the home is
// made, before the sandbox is) left them behind for good. So each is
// registered first: a lock file in the state dir, flock'ed by its sbx for
// the run's life (the kernel drops the lock when sbx dies). sweepTmpHomes,
// run by every later run, removes the homes whose lock is free, unless a
// pending copy-back still needs them (stage.Pending).

// TmpPrefix starts the name of every throwaway home.
const TmpPrefix = "sbx-home-"

// unregisteredHomeAge is how old a throwaway home without a record (made
// by an older sbx version, or whose run is registering it) must be before a
// sweep removes it.
const unregisteredHomeAge = 24 * time.Hour

func TmpLock(stateDir, id string) string {
	return filepath.Join(stateDir, "homes", id+".lock")
}

// RegisterTmp creates run id's throwaway-home record already locked
// (made and flock'ed under a temporary name, then linked into place), so
// that a record without a lock always means a run that has ended.
func RegisterTmp(stateDir, id string) (*os.File, error) {
	dir := filepath.Join(stateDir, "homes")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("register throwaway home: %w", err)
	}
	f, err := lockfile.Publish(TmpLock(stateDir, id), nil)
	if err != nil {
		return nil, fmt.Errorf("register throwaway home: %w", err)
	}
	return f, nil
}

// homeLockFree reports whether run id's record exists and is not held.
func homeLockFree(stateDir, id string) (exists, free bool) {
	f, err := os.Open(TmpLock(stateDir, id))
	if err != nil {
		return false, false
	}
	defer f.Close()
	held, err := lockfile.TryLock(f)
	return true, !held && err == nil
}

// SweepTmp removes the throwaway homes of runs whose sbx is gone (see
// above), each as its owner, and their records.
func SweepTmp(stateDir string) {
	homes, _ := filepath.Glob(filepath.Join(os.TempDir(), TmpPrefix+"*"))
	for _, h := range homes {
		id, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(h), TmpPrefix), "-")
		if !ok || sandbox.ValidID(id) != nil {
			continue
		}
		var st unix.Stat_t
		if err := unix.Lstat(h, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		age := time.Since(time.Unix(st.Mtim.Unix()))
		registered, free := homeLockFree(stateDir, id)
		switch {
		case registered && !free:
			continue
		case !registered && age < unregisteredHomeAge:
			continue
		case stage.Pending(stage.StateDir(stateDir), h):
			continue
		}
		owner := hostfs.LookupCred(int(st.Uid), int(st.Gid))
		if err := RemoveAsUser(owner, h); err == nil || errors.Is(err, fs.ErrNotExist) {
			os.Remove(TmpLock(stateDir, id))
		}
		// Records are the lock file; the home's name is what is swept.
	}
	// Records whose home is gone (removed by a Recover, say) and whose
	// run has ended.
	locks, _ := filepath.Glob(filepath.Join(stateDir, "homes", "*.lock"))
	for _, l := range locks {
		id := strings.TrimSuffix(filepath.Base(l), ".lock")
		if m, _ := filepath.Glob(filepath.Join(os.TempDir(), TmpPrefix+id+"-*")); len(m) > 0 {
			continue
		}
		if _, free := homeLockFree(stateDir, id); free {
			os.Remove(l)
		}
	}
}
