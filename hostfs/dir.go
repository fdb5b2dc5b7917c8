package hostfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// FileID identifies a file on the host: device and inode.
type FileID struct {
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
}

// IDOf returns the FileID of an open file.
func IDOf(f *os.File) (FileID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return FileID{}, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	return FileID{Dev: st.Dev, Ino: st.Ino}, nil
}

// resolve is how every name is resolved: no symlink in any component, no
// magic link, never above the starting directory, never across a mount.
const resolve = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV

// Dir is an open host directory. Its methods take slash-separated relative
// names and never follow a symlink in any of their components, never leave
// the directory and never cross a mount point.
type Dir struct {
	f    *os.File
	name string // for messages
}

// OpenDir opens the absolute path p, which must be free of symlinks (a
// path recorded after filepath.EvalSymlinks), without following any: a
// component replaced by a symlink since fails with ELOOP (or
// ErrReplaced). If want is not nil, the directory must be that file.
// Mount points along p are allowed (p is a host path, not a sandbox tree).
func OpenDir(p string, want *FileID) (*Dir, error) {
	f, err := OpenPath(p, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return nil, err
	}
	d := &Dir{f: f, name: p}
	if want != nil {
		if err := d.check(*want); err != nil {
			d.Close()
			return nil, err
		}
	}
	return d, nil
}

// OpenPath opens the absolute path p with flags (O_CLOEXEC added) without
// following a symlink in any component, the last one included (ELOOP), as
// OpenDir does.
func OpenPath(p string, flags int) (*os.File, error) {
	if !filepath.IsAbs(p) {
		return nil, fmt.Errorf("open %s: not an absolute path", p)
	}
	fd, err := openat2(unix.AT_FDCWD, filepath.Clean(p), flags, 0,
		unix.RESOLVE_NO_SYMLINKS|unix.RESOLVE_NO_MAGICLINKS)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), nil
}

// check fails with ErrReplaced unless d is want.
func (d *Dir) check(want FileID) error {
	id, err := d.ID()
	if err != nil {
		return err
	}
	if id != want {
		return fmt.Errorf("%s: %w", d.name, ErrReplaced)
	}
	return nil
}

// Name returns the path d was opened with (joined for subdirectories).
func (d *Dir) Name() string { return d.name }

// ID returns d's FileID.
func (d *Dir) ID() (FileID, error) { return IDOf(d.f) }

// Close closes d.
func (d *Dir) Close() error { return d.f.Close() }

// Stat returns d's own FileInfo.
func (d *Dir) Stat() (fs.FileInfo, error) { return d.f.Stat() }

func (d *Dir) join(rel string) string { return path.Join(d.name, rel) }

// checkRel refuses absolute and escaping names early, with a clear error.
func checkRel(rel string) error {
	if rel == "" || path.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") {
		return fmt.Errorf("%q is not a name below the directory", rel)
	}
	return nil
}

// OpenFile opens rel below d with flags (O_NOFOLLOW and O_CLOEXEC added).
func (d *Dir) OpenFile(rel string, flags int, perm fs.FileMode) (*os.File, error) {
	if err := checkRel(rel); err != nil {
		return nil, &os.PathError{Op: "open", Path: d.join(rel), Err: err}
	}
	fd, err := openat2(int(d.f.Fd()), rel, flags|unix.O_NOFOLLOW, uint64(perm.Perm()), resolve)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: d.join(rel), Err: err}
	}
	return os.NewFile(uintptr(fd), d.join(rel)), nil
}

// Open opens rel below d for reading; O_NONBLOCK keeps a FIFO planted
// there from blocking.
func (d *Dir) Open(rel string) (*os.File, error) {
	return d.OpenFile(rel, unix.O_RDONLY|unix.O_NONBLOCK, 0)
}

// OpenDir opens the directory rel below d (rel "." is d again).
func (d *Dir) OpenDir(rel string) (*Dir, error) {
	f, err := d.OpenFile(rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	return &Dir{f: f, name: d.join(rel)}, nil
}

// parent opens the directory holding rel and returns it with rel's last
// component, which must be a plain name.
func (d *Dir) parent(op, rel string) (*Dir, string, error) {
	if err := checkRel(rel); err != nil {
		return nil, "", &os.PathError{Op: op, Path: d.join(rel), Err: err}
	}
	dir, base := path.Split(path.Clean(rel))
	if base == "." || base == ".." {
		return nil, "", &os.PathError{Op: op, Path: d.join(rel), Err: unix.EINVAL}
	}
	if dir == "" {
		dir = "."
	}
	p, err := d.OpenDir(dir)
	if err != nil {
		return nil, "", err
	}
	return p, base, nil
}

// Lstat returns the FileInfo of rel itself (a symlink is not followed).
func (d *Dir) Lstat(rel string) (fs.FileInfo, error) {
	p, base, err := d.parent("lstat", rel)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	// O_PATH|O_NOFOLLOW opens the entry itself, whatever it is.
	fd, err := unix.Openat(int(p.f.Fd()), base, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "lstat", Path: d.join(rel), Err: err}
	}
	f := os.NewFile(uintptr(fd), d.join(rel))
	defer f.Close()
	return f.Stat()
}

// Mkdir creates the directory rel (its parent must exist).
func (d *Dir) Mkdir(rel string, perm fs.FileMode) error {
	p, base, err := d.parent("mkdir", rel)
	if err != nil {
		return err
	}
	defer p.Close()
	if err := unix.Mkdirat(int(p.f.Fd()), base, uint32(perm.Perm())); err != nil {
		return &os.PathError{Op: "mkdir", Path: d.join(rel), Err: err}
	}
	return nil
}

// MkdirAll creates rel and its missing parents below d; an existing
// component must be a directory (not a symlink to one).
func (d *Dir) MkdirAll(rel string, perm fs.FileMode) error {
	cur := ""
	for _, c := range strings.Split(path.Clean(rel), "/") {
		if c == "." {
			continue
		}
		cur = path.Join(cur, c)
		err := d.Mkdir(cur, perm)
		if err == nil || !errors.Is(err, fs.ErrExist) {
			if err != nil {
				return err
			}
			continue
		}
		fi, serr := d.Lstat(cur)
		if serr != nil {
			return serr
		}
		if !fi.IsDir() {
			return &os.PathError{Op: "mkdir", Path: d.join(cur), Err: unix.ENOTDIR}
		}
	}
	return nil
}

// Remove removes the file or empty directory rel (a symlink itself, never
// what it names).
func (d *Dir) Remove(rel string) error {
	p, base, err := d.parent("remove", rel)
	if err != nil {
		return err
	}
	defer p.Close()
	err = unix.Unlinkat(int(p.f.Fd()), base, 0)
	if errors.Is(err, unix.EISDIR) {
		err = unix.Unlinkat(int(p.f.Fd()), base, unix.AT_REMOVEDIR)
	}
	if err != nil {
		return &os.PathError{Op: "remove", Path: d.join(rel), Err: err}
	}
	return nil
}

// Empty removes everything in d, never following a symlink (d itself
// stays).
func (d *Dir) Empty() error {
	names, err := d.ReadDir(".")
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := d.RemoveAll(n); err != nil {
			return err
		}
	}
	return nil
}

// RemoveAll removes rel and everything below it without following any
// symlink; a missing rel is no error.
func (d *Dir) RemoveAll(rel string) error {
	fi, err := d.Lstat(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		names, err := d.ReadDir(rel)
		if err != nil {
			return err
		}
		for _, n := range names {
			if err := d.RemoveAll(path.Join(rel, n)); err != nil {
				return err
			}
		}
	}
	if err := d.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// ReadDir returns the sorted names in the directory rel.
func (d *Dir) ReadDir(rel string) ([]string, error) {
	sub, err := d.OpenDir(rel)
	if err != nil {
		return nil, err
	}
	defer sub.Close()
	names, err := sub.f.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", sub.name, err)
	}
	sort.Strings(names)
	return names, nil
}

// Rename renames oldRel to newRel, both below d (replacing newRel).
func (d *Dir) Rename(oldRel, newRel string) error {
	op, ob, err := d.parent("rename", oldRel)
	if err != nil {
		return err
	}
	defer op.Close()
	np, nb, err := d.parent("rename", newRel)
	if err != nil {
		return err
	}
	defer np.Close()
	if err := unix.Renameat(int(op.f.Fd()), ob, int(np.f.Fd()), nb); err != nil {
		return &os.LinkError{Op: "rename", Old: d.join(oldRel), New: d.join(newRel), Err: err}
	}
	return nil
}

// Link makes newRel a hard link of oldRel (never replacing newRel; a
// symlink oldRel is linked itself, not followed).
func (d *Dir) Link(oldRel, newRel string) error {
	op, ob, err := d.parent("link", oldRel)
	if err != nil {
		return err
	}
	defer op.Close()
	np, nb, err := d.parent("link", newRel)
	if err != nil {
		return err
	}
	defer np.Close()
	if err := unix.Linkat(int(op.f.Fd()), ob, int(np.f.Fd()), nb, 0); err != nil {
		return &os.LinkError{Op: "link", Old: d.join(oldRel), New: d.join(newRel), Err: err}
	}
	return nil
}

// Chown changes d's own owner (fchown: d is the directory opened, not a
// name that could be swapped).
func (d *Dir) Chown(uid, gid int) error {
	if err := unix.Fchown(int(d.f.Fd()), uid, gid); err != nil {
		return &os.PathError{Op: "chown", Path: d.name, Err: err}
	}
	return nil
}

// ChownIf changes the owner of rel itself (a symlink is never followed)
// when ok accepts what rel is: the entry is opened once (O_PATH), checked
// on that descriptor and changed through it, so an entry swapped after
// the check is never the one changed. It reports whether it changed it.
func (d *Dir) ChownIf(rel string, uid, gid int, ok func(*unix.Stat_t) bool) (bool, error) {
	p, base, err := d.parent("chown", rel)
	if err != nil {
		return false, err
	}
	defer p.Close()
	fd, err := unix.Openat(int(p.f.Fd()), base, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, &os.PathError{Op: "chown", Path: d.join(rel), Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, &os.PathError{Op: "chown", Path: d.join(rel), Err: err}
	}
	if !ok(&st) {
		return false, nil
	}
	if err := unix.Fchownat(fd, "", uid, gid, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return false, &os.PathError{Op: "chown", Path: d.join(rel), Err: err}
	}
	return true, nil
}

// Sync flushes d's entries to disk.
func (d *Dir) Sync() error {
	if err := d.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", d.name, err)
	}
	return nil
}

// openat2 opens name below dirfd with how's resolve flags. Without
// openat2 (before Linux 5.6, or refused by a seccomp filter) it walks the
// components with O_NOFOLLOW, refusing "..", which gives the same
// guarantees but for RESOLVE_NO_XDEV.
func openat2(dirfd int, name string, flags int, mode uint64, res uint64) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Mode: mode, Resolve: res}
	for {
		fd, err := unix.Openat2(dirfd, name, &how)
		switch {
		case err == unix.EINTR || err == unix.EAGAIN:
			continue
		case err == unix.ENOSYS || err == unix.EPERM && fallbackNeeded():
			return walkOpen(dirfd, name, flags, uint32(mode))
		}
		return fd, err
	}
}

// fallbackNeeded tells an EPERM from a seccomp filter that refuses openat2
// (probed once) from a real permission error.
func fallbackNeeded() bool {
	_, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC | unix.O_PATH})
	return err == unix.ENOSYS || err == unix.EPERM
}

// walkOpen opens name one component at a time, none of them a symlink.
func walkOpen(dirfd int, name string, flags int, mode uint32) (int, error) {
	parts := strings.Split(name, "/")
	cur := dirfd
	if strings.HasPrefix(name, "/") {
		fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, err
		}
		cur = fd
	}
	closeCur := func() {
		if cur != dirfd {
			unix.Close(cur)
		}
	}
	var comps []string
	for _, p := range parts {
		if p != "" && p != "." {
			comps = append(comps, p)
		}
	}
	if len(comps) == 0 {
		comps = []string{"."}
	}
	for i, c := range comps {
		if c == ".." {
			closeCur()
			return -1, unix.EXDEV
		}
		if i == len(comps)-1 {
			fd, err := unix.Openat(cur, c, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
			closeCur()
			return fd, err
		}
		fd, err := unix.Openat(cur, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		closeCur()
		if err != nil {
			return -1, err
		}
		cur = fd
	}
	return -1, unix.EINVAL
}
