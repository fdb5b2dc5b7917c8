package hostfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// ErrChanged is wrapped by [Cred.Hold]'s error when a path changed between
// its resolution and its opening (a component became a symlink).
var ErrChanged = errors.New("changed while sbx resolved it")

// Held is a host path resolved once and held open by an O_PATH file
// descriptor: what sbx checks and later compares the mounted file with.
type Held struct {
	// File is the O_PATH descriptor; it keeps the inode (and so its
	// number) alive for as long as it is open.
	File *os.File
	// Path is the file's real path, read back from the descriptor.
	Path string
	// ID is the file's device and inode; MntID the id of the mount it
	// was opened on (0 when the kernel cannot tell, before 5.8).
	ID    FileID
	MntID uint64
	// Mode is the file's type bits (fs.ModeDir, 0 for a regular file, ...).
	Mode fs.FileMode
	// FSType is the statfs magic of the file system it lies on.
	FSType int64
}

// Close closes h's descriptor.
func (h *Held) Close() error { return h.File.Close() }

// Hold resolves the absolute path p with c's rights: its symlinks are
// evaluated once (a user's path may legitimately be reached through some,
// such as /home -> /var/home), then the canonical path is opened with
// O_PATH from "/" without following a symlink in any component. A
// component that became a symlink between the two steps, or a file that
// is no longer at the canonical path once opened (renamed), fails with
// [ErrChanged]. Everything about the file is then read from the
// descriptor, never by name again.
func (c Cred) Hold(p string) (*Held, error) {
	if !filepath.IsAbs(p) {
		return nil, fmt.Errorf("resolve %s: not an absolute path", p)
	}
	var (
		f     *os.File
		canon string
	)
	err := c.Do(func() error {
		var err error
		if canon, err = filepath.EvalSymlinks(p); err != nil {
			if errors.Is(err, unix.EINVAL) {
				// readlink of a name that was a symlink when
				// lstat saw it, and is none now: swapped
				// while it was resolved.
				return fmt.Errorf("%s: %w", p, ErrChanged)
			}
			return err
		}
		f, err = OpenPath(canon, unix.O_PATH)
		if errors.Is(err, unix.ELOOP) {
			return fmt.Errorf("%s: %w", p, ErrChanged)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	h, err := held(f)
	if err == nil && h.Path != canon {
		// Renamed (or exchanged) since it was opened: the name sbx
		// would mount is no longer the file it holds.
		err = fmt.Errorf("%s: %w (now at %s)", p, ErrChanged, h.Path)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return h, nil
}

// held reads what Held records from the open f.
func held(f *os.File) (*Held, error) {
	fd := int(f.Fd())
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_STATX_SYNC_AS_STAT, unix.STATX_TYPE|unix.STATX_INO|unix.STATX_MNT_ID, &stx); err != nil {
		return nil, &os.PathError{Op: "statx", Path: f.Name(), Err: err}
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err != nil {
		return nil, &os.PathError{Op: "fstatfs", Path: f.Name(), Err: err}
	}
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return nil, fmt.Errorf("read back the path of %s: %w", f.Name(), err)
	}
	h := &Held{
		File:   f,
		Path:   real,
		ID:     FileID{Dev: unix.Mkdev(stx.Dev_major, stx.Dev_minor), Ino: stx.Ino},
		FSType: int64(sfs.Type),
	}
	if stx.Mask&unix.STATX_MNT_ID != 0 {
		h.MntID = stx.Mnt_id
	}
	switch stx.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		h.Mode = fs.ModeDir
	case unix.S_IFREG:
	case unix.S_IFLNK:
		h.Mode = fs.ModeSymlink
	default:
		h.Mode = fs.ModeIrregular
	}
	return h, nil
}

// OpenInRoot opens the absolute path p with O_PATH inside the tree whose
// root is the open directory root (a sandbox's /proc/PID/root): p is
// resolved as if root were "/" (RESOLVE_IN_ROOT) and no symlink or magic
// link is followed at any component (ELOOP), so the file is what the
// sandbox shows at p, never a file a link there names.
func OpenInRoot(root *os.File, p string) (*os.File, error) {
	if !filepath.IsAbs(p) {
		return nil, fmt.Errorf("%s: not an absolute path", p)
	}
	rel, err := filepath.Rel("/", filepath.Clean(p))
	if err != nil {
		return nil, err
	}
	fd, err := openat2(int(root.Fd()), rel, unix.O_PATH, 0,
		unix.RESOLVE_IN_ROOT|unix.RESOLVE_NO_SYMLINKS|unix.RESOLVE_NO_MAGICLINKS)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), nil
}

// IDInRoot returns the FileID of what [OpenInRoot] opens.
func IDInRoot(root *os.File, p string) (FileID, error) {
	f, err := OpenInRoot(root, p)
	if err != nil {
		return FileID{}, err
	}
	defer f.Close()
	return IDOf(f)
}
