package policysrc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/hostfs"
)

// SymlinkError is a path that has a symlink at Link (a component of Path,
// or Path itself): it is not followed.
type SymlinkError struct {
	Path, Link string
}

func (e *SymlinkError) Error() string {
	if e.Link == e.Path {
		return e.Path + ": a symlink is not followed"
	}
	return e.Path + ": " + e.Link + " is a symlink (not followed)"
}

// OpenNoFollow opens the absolute path p with O_PATH, following no
// symlink at any component (the last one included): a symlink is a
// *SymlinkError naming the first one.
func OpenNoFollow(p string) (*os.File, error) {
	p = filepath.Clean(p)
	f, err := hostfs.OpenPath(p, unix.O_PATH)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EXDEV) {
		if l := firstSymlink(p); l != "" {
			return nil, &SymlinkError{Path: p, Link: l}
		}
	}
	return f, err
}

// firstSymlink returns the first component of p that is a symlink, or "".
// For messages only: the decision was made by OpenNoFollow.
func firstSymlink(p string) string {
	cur := "/"
	for _, c := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		cur = filepath.Join(cur, c)
		if fi, err := os.Lstat(cur); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return cur
		}
	}
	return ""
}

// IDs returns the identities of the paths that exist, following
// symlinks: the roots an earlier, trusted layer named.
func IDs(paths []string) []hostfs.FileID {
	var out []hostfs.FileID
	for _, p := range paths {
		f, err := os.OpenFile(p, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			continue
		}
		if id, err := hostfs.IDOf(f); err == nil {
			out = append(out, id)
		}
		f.Close()
	}
	return out
}

// Covered reports whether the absolute path p lies at or below one of
// roots, by identity: p is opened with no symlink followed at any
// component (a symlink is a *SymlinkError), and the directories of its
// chain are compared with roots by device and inode. A p that does not
// exist is an error: there is nothing to compare.
func Covered(p string, roots []hostfs.FileID) (bool, error) {
	f, err := OpenNoFollow(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	dir := f
	var self []link
	if !fi.IsDir() {
		// The chain of a file is its directory's: opened the same way,
		// and checked to hold the very file.
		parent, err := OpenNoFollow(filepath.Dir(filepath.Clean(p)))
		if err != nil {
			return false, err
		}
		defer parent.Close()
		var st unix.Stat_t
		if err := unix.Fstatat(int(parent.Fd()), filepath.Base(p), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return false, &os.PathError{Op: "lstat", Path: p, Err: err}
		}
		id, _ := hostfs.IDOf(f)
		if (hostfs.FileID{Dev: st.Dev, Ino: st.Ino}) != id {
			return false, fmt.Errorf("%s: %w", p, hostfs.ErrReplaced)
		}
		self = []link{{id: id}}
		dir = parent
	}
	links, err := chain(dir)
	if err != nil {
		return false, err
	}
	for _, l := range append(self, links...) {
		if slices.Contains(roots, l.id) {
			return true, nil
		}
	}
	return false, nil
}
