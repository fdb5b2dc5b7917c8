package home

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/hostfs"
	"github.com/sbx-sandbox/sbx/internal/lockfile"
	"github.com/sbx-sandbox/sbx/sandbox"
	"github.com/sbx-sandbox/sbx/stage"
)

// What is one run's alone (the files package stage copies in for it, the
// copies of its single --rw files) lives in a run dir of its own,
// <state dir>/runs/<id>: mode 0700, the invoking user's, outside every sbx
// home and every tree a sandbox can see. The run binds each piece at its
// path below its home (see sandbox.Spec.RunBinds), so a concurrent run of
// the same workspace, which shares the home, neither reads nor changes
// them, and a later one finds nothing. The dir is removed once the run's
// copy-back ends. A lock file beside it, flock'ed for the run's life, lets
// a later run's sweep remove the dir of a killed run, after stage.Recover
// has copied back what it staged.

// RunDir is one run's private state directory.
type RunDir struct {
	path     string
	dir      *hostfs.Dir // opened by sbx itself: the user cannot search root's state dir
	lock     *os.File    // flock'ed for the run's life, linked at lockPath
	lockPath string
	cred     hostfs.Cred
}

// Subdirectories of a run dir.
const (
	RunStageDir = "stage" // package stage's RunDir
	runRWDir    = "rw"    // copies of single --rw files
)

func runsDir(stateDir string) string { return filepath.Join(stateDir, "runs") }

// NewRunDir creates run id's dir, already registered (its lock held), and
// gives it to the user c: the dir is made by sbx in its own state dir (the
// user may not write there) and handed over by descriptor; what is inside
// is made with the user's identity.
func NewRunDir(stateDir, id string, c hostfs.Cred) (*RunDir, error) {
	parent := runsDir(stateDir)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, fmt.Errorf("create run dir: %w", err)
	}
	// sbx's own state dir (a link in its path, /var/run say, is the
	// host's): the dir is opened below without following any.
	parent, err := filepath.EvalSymlinks(parent)
	if err != nil {
		return nil, fmt.Errorf("create run dir: %w", err)
	}
	lockPath := filepath.Join(parent, id+".lock")
	lock, err := lockfile.Publish(lockPath, nil)
	if err != nil {
		return nil, fmt.Errorf("create run dir: %w", err)
	}
	r := &RunDir{path: filepath.Join(parent, id), lock: lock, lockPath: lockPath, cred: c}
	fail := func(err error) (*RunDir, error) {
		if r.dir != nil {
			r.dir.Close()
		}
		os.Remove(r.path)
		os.Remove(lockPath)
		lock.Close()
		return nil, fmt.Errorf("create run dir: %w", err)
	}
	if err := unix.Mkdir(r.path, 0o700); err != nil {
		return fail(&os.PathError{Op: "mkdir", Path: r.path, Err: err})
	}
	if r.dir, err = hostfs.OpenDir(r.path, nil); err != nil {
		return fail(err)
	}
	if os.Geteuid() == 0 && c.UID != 0 {
		if err := r.dir.Chown(c.UID, c.GID); err != nil {
			return fail(err)
		}
	}
	err = c.Do(func() error {
		for _, sub := range []string{RunStageDir, runRWDir} {
			if err := r.dir.Mkdir(sub, 0o700); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	return r, nil
}

// sub is the host path of a subdirectory of r.
func (r *RunDir) Sub(name string) string { return filepath.Join(r.path, name) }

// remove removes r once its copy-back is done; while package stage still
// needs it for a retry (a failed copy-back), it stays for a later run's
// sweep. Either way r's lock is let go.
func (r *RunDir) Remove(stagingState string) {
	defer r.lock.Close()
	defer r.dir.Close()
	if stage.Pending(stagingState, r.path) {
		return
	}
	if err := r.cred.Do(r.dir.Empty); err == nil {
		os.Remove(r.path)
		os.Remove(r.lockPath)
	}
}

// SweepRunDirs removes the run dirs of runs whose sbx is gone (their lock
// is free) and whose copy-back stage.Recover has finished, each emptied
// as its owner, and the records of those runs. The --rw copies of a
// killed run are copied back first, as for a run that ended.
func SweepRunDirs(stateDir string, log io.Writer) {
	parent, err := filepath.EvalSymlinks(runsDir(stateDir))
	if err != nil {
		return
	}
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range ents {
		name := e.Name()
		if id, ok := strings.CutSuffix(name, ".lock"); ok && sandbox.ValidID(id) == nil {
			if _, err := os.Lstat(filepath.Join(parent, id)); errors.Is(err, fs.ErrNotExist) {
				if f, held, _ := lockfile.TryOpen(filepath.Join(parent, name)); f != nil && !held {
					os.Remove(f.Name())
					f.Close()
				}
			}
			continue
		}
		if sandbox.ValidID(name) != nil || strings.HasPrefix(name, ".") {
			continue
		}
		p := filepath.Join(parent, name)
		f, held, err := lockfile.TryOpen(p + ".lock")
		if held || err != nil {
			continue
		}
		if !stage.Pending(stage.StateDir(stateDir), p) {
			removeRunDir(p, log)
		}
		if f != nil {
			os.Remove(f.Name())
			f.Close()
		}
	}
}

// removeRunDir empties the run dir p of a killed run as its owner and
// removes it, after copying back its --rw copies.
func removeRunDir(p string, log io.Writer) {
	d, err := hostfs.OpenDir(p, nil)
	if err != nil {
		return
	}
	defer d.Close()
	fi, err := d.Stat()
	if err != nil {
		return
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	owner := hostfs.Cred{UID: os.Geteuid(), GID: os.Getegid()}
	if ok {
		owner = hostfs.LookupCred(int(st.Uid), int(st.Gid))
	}
	id := filepath.Base(p)
	if copies := readRWRecord(owner, d); len(copies) > 0 {
		fmt.Fprintf(log, "sbx: copying back the --rw files of run %s (its sbx is gone)\n", id)
		if err := CopyBackRW(copies, &RunDir{path: p, dir: d}, id, owner, ownerHome(owner.UID), log); err != nil {
			fmt.Fprintf(log, "sbx: warning: %v\n", err)
		}
	}
	if owner.Do(d.Empty) == nil {
		os.Remove(p)
	}
}

// readRWRecord reads the record of a run dir's --rw copies, as its owner.
func readRWRecord(owner hostfs.Cred, d *hostfs.Dir) []RWCopy {
	var copies []RWCopy
	_ = owner.Do(func() error {
		f, err := d.Open(rwRecord)
		if err != nil {
			return err
		}
		defer f.Close()
		return json.NewDecoder(io.LimitReader(f, 1<<20)).Decode(&copies)
	})
	return copies
}

// ownerHome returns the home of uid from the passwd database, resolved
// ("" when there is none).
func ownerHome(uid int) string {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil || !filepath.IsAbs(u.HomeDir) {
		return ""
	}
	return realPath(u.HomeDir)
}
