package policysrc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/hostfs"
)

// A Root is a tree a sandbox may write: this run's workspace and writable
// paths, sbx's homes.
type Root struct {
	// What names it in messages ("the workspace", "--rw", "sbx's homes").
	What string
	Path string
	ID   hostfs.FileID
}

// NewRoot returns the root at path (symlinks followed), false when it
// does not exist.
func NewRoot(what, path string) (Root, bool) {
	ids := IDs([]string{path})
	if len(ids) == 0 {
		return Root{}, false
	}
	return Root{What: what, Path: path, ID: ids[0]}, true
}

// Checker decides whether a policy input may widen (see the package doc).
// Its methods open files as the calling thread's file-system identity:
// call them inside hostfs.Cred.Do of the invoking user.
type Checker struct {
	// UID is the invoking user's.
	UID int
	// Roots are the trees a sandbox may write.
	Roots []Root
	// Grants are the earlier and concurrent runs' (see [Load]).
	Grants []Grant
}

// Open opens the policy input at the absolute path p for reading: its
// directory as named, the file itself never through a symlink, without
// blocking (a FIFO), a regular file only. It returns the file and why it
// may only tighten ("" when it may widen). A missing file is an error
// wrapping fs.ErrNotExist.
func (c Checker) Open(p string) (*os.File, string, error) {
	p = filepath.Clean(p)
	dir, err := os.OpenFile(filepath.Dir(p), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", err
	}
	defer dir.Close()
	fd, err := unix.Openat(int(dir.Fd()), filepath.Base(p), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, "", &SymlinkError{Path: p, Link: p}
		}
		return nil, "", &os.PathError{Op: "open", Path: p, Err: err}
	}
	f := os.NewFile(uintptr(fd), p)
	why, err := c.why(f, dir, p)
	if err != nil {
		f.Close()
		return nil, "", err
	}
	return f, why, nil
}

// why returns why the file f, opened in dir, may only tighten, or "".
func (c Checker) why(f, dir *os.File, p string) (string, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return "", &os.PathError{Op: "fstat", Path: p, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return "", fmt.Errorf("%s: not a regular file", p)
	}
	if !c.mine(st.Uid) {
		return fmt.Sprintf("it belongs to uid %d, not to you", st.Uid), nil
	}
	if st.Mode&0o022 != 0 {
		return fmt.Sprintf("others may write it (mode %04o)", st.Mode&0o7777), nil
	}
	links, err := chain(dir)
	if err != nil {
		return "", err
	}
	ctime := st.Ctim.Nano()
	self, err := statLink(int(f.Fd()))
	if err != nil {
		return "", &os.PathError{Op: "statx", Path: p, Err: err}
	}
	self.mode = 0 // the file's own mode was checked above
	// The file itself, then its directories (a single file granted to a
	// run is a root too); names are for messages only.
	name := p
	for _, l := range append([]link{self}, links...) {
		switch {
		case !c.mine(l.uid):
			return fmt.Sprintf("the directory %s above it belongs to uid %d", name, l.uid), nil
		case l.mode&0o022 != 0 && l.mode&unix.S_ISVTX == 0:
			return fmt.Sprintf("others may write the directory %s above it (mode %04o)", name, l.mode&0o7777), nil
		}
		for _, r := range c.Roots {
			if r.ID == l.id {
				return fmt.Sprintf("it lies inside %s %s, which a sandbox may write", r.What, r.Path), nil
			}
		}
		for _, g := range c.Grants {
			if g.applies(l) && g.Covers(ctime) {
				return fmt.Sprintf("it was changed at %s, while the run of sbx pid %d (started %s) could write %s",
					stamp(ctime), g.PID, stamp(g.Start), g.Path), nil
			}
		}
		name = filepath.Dir(name)
	}
	return "", nil
}

// mine reports whether uid is the invoking user's or root's.
func (c Checker) mine(uid uint32) bool { return int(uid) == c.UID || uid == 0 }

func stamp(ns int64) string { return time.Unix(0, ns).UTC().Format("2006-01-02 15:04:05Z") }
