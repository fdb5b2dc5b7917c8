package home

import (
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/hostfs"
	"github.com/sbx-sandbox/sbx/invoker"
)

// sbx versions before the mount points were made as the user (see
// mountpoints.go) left root-owned directories and empty files in a user's
// sbx home when they ran under sudo: the program then failed with EACCES
// below them (pi's ~/.pi/agent/sessions, Gemini's project registry), and so
// did every later run of that workspace, rootless too, and the user could
// not remove the home. repairHome finds them at the start of a run and,
// when sbx is root, gives them back to the user; rootless, it says the one
// command that does.

// Bounds of the search: a home is searched once per state dir (per boot
// for root's /run/sbx) once a search completed.
const (
	repairMaxEntries = 20000
	repairMaxDepth   = 12
	repairBudget     = 2 * time.Second
)

// Repair searches the sbx home dir (the invoking user who's) for
// entries owned by root, without following symlinks or crossing mounts.
// As root it changes each directory, and each empty regular file with one
// link, to the user (by descriptor, see hostfs.Dir.ChownIf) and says so in one
// line; rootless it prints the command to run. A completed search is
// recorded in stateDir, keyed by the home's identity, and not repeated.
func Repair(dir string, who invoker.User, cred hostfs.Cred, stateDir string, log io.Writer) {
	if who.UID == 0 {
		return
	}
	err := cred.Do(func() error {
		d, err := hostfs.OpenDir(dir, nil)
		if err != nil {
			return err
		}
		defer d.Close()
		id, err := d.ID()
		if err != nil {
			return err
		}
		mark := filepath.Join(stateDir, "homes-checked", fmt.Sprintf("%d-%d-%d", who.UID, id.Dev, id.Ino))
		if _, err := os.Lstat(mark); err == nil {
			return nil
		}
		var found []string
		complete := walkHome(d, func(rel string, st *syscall.Stat_t) {
			if madeByRoot(st.Uid, st.Mode, uint64(st.Nlink), st.Size) {
				found = append(found, rel)
			}
		})
		fixed := 0
		if len(found) > 0 && os.Geteuid() == 0 {
			// Changing an owner needs root's own rights.
			_ = hostfs.AsSelf(func() error {
				for _, rel := range found {
					ok, err := d.ChownIf(rel, who.UID, who.GID, rootMountPoint)
					if err == nil && ok {
						fixed++
					}
				}
				return nil
			})
		}
		switch {
		case len(found) == 0:
		case fixed == len(found):
			fmt.Fprintf(log, "sbx: gave %d root-owned entries in the sbx home %s (left by an earlier sbx run as root) back to %s\n", fixed, dir, who.Name)
		default:
			fmt.Fprintf(log, "sbx: the sbx home %s holds %d entries owned by root (left by an earlier sbx run as root), which the program cannot change; give them back with: sudo find '%s' -xdev -user 0 \\( -type d -o -type f -links 1 \\) -exec chown -h %d:%d {} +\n", dir, len(found)-fixed, dir, who.UID, who.GID)
			return nil
		}
		// A search cut short by its bounds is recorded too when it found
		// nothing: what an earlier sbx made lies near the top, which a
		// breadth-first search sees first.
		if complete || len(found) == 0 {
			_ = hostfs.AsSelf(func() error {
				if err := os.MkdirAll(filepath.Dir(mark), 0o700); err != nil {
					return err
				}
				return os.WriteFile(mark, nil, 0o600)
			})
		}
		return nil
	})
	if err != nil {
		fmt.Fprintf(log, "sbx: warning: checking the owner of the sbx home %s: %v\n", dir, err)
	}
}

// rootMountPoint is madeByRoot of the stat data ChownIf checks.
func rootMountPoint(st *unix.Stat_t) bool {
	return madeByRoot(st.Uid, st.Mode, uint64(st.Nlink), st.Size)
}

// madeByRoot accepts what an earlier sbx made as root in a home: a
// root-owned directory, or a root-owned empty regular file with a single
// link (a mount point). A file with content, a hard link to a file
// elsewhere, a symlink or a special file is never given away.
func madeByRoot(uid, mode uint32, nlink uint64, size int64) bool {
	if uid != 0 {
		return false
	}
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return true
	case unix.S_IFREG:
		return nlink == 1 && size == 0
	}
	return false
}

// walkHome calls fn for every entry below d, breadth first (what an
// earlier sbx made lies near the top: the mount points of paths below the
// home), never following a symlink and never crossing a mount, within the
// bounds above; it reports whether it saw every entry.
func walkHome(d *hostfs.Dir, fn func(rel string, st *syscall.Stat_t)) bool {
	deadline := time.Now().Add(repairBudget)
	seen := 0
	level := []string{"."}
	for depth := 0; len(level) > 0; depth++ {
		if depth > repairMaxDepth {
			return false
		}
		var next []string
		for _, dir := range level {
			names, err := d.ReadDir(dir)
			if err != nil {
				continue // unreadable (root's 0700, say): its entry was reported
			}
			for _, n := range names {
				if seen++; seen > repairMaxEntries || time.Now().After(deadline) {
					return false
				}
				p := path.Join(dir, n)
				fi, err := d.Lstat(p)
				if err != nil {
					continue
				}
				st, ok := fi.Sys().(*syscall.Stat_t)
				if !ok {
					continue
				}
				fn(p, st)
				if fi.IsDir() {
					next = append(next, p)
				}
			}
		}
		level = next
	}
	return true
}
