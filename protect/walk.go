package protect

// The walk for protected entries through the writable trees of a run (see
// protectPaths).

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sbx-sandbox/sbx/hostfs"
	"golang.org/x/sys/unix"
)

// walker holds the state of one protectPaths.
type walker struct {
	t trees
	// mounts are the sandbox's mounts of host paths at their own path
	// (the workspace, --ro and --rw paths), each with whether it is
	// writable.
	mounts map[string]bool
	opened map[string]bool
	found  []string
	// end says the walk runs after the run (see Mounts.Created): it
	// records a protected entry that is a symlink instead of refusing it,
	// and does not follow gitfiles.
	end      bool
	dirs     int
	lim      Limits
	deadline time.Time
	// buf and ents are readDir's, reused from one directory to the next.
	buf  []byte
	ents []dirent
}

// mountOf returns the mount p lies in (the longest mounted path that is p
// or above it) and whether it is writable; "" outside every mount.
func (w *walker) mountOf(p string) (string, bool) {
	for d := p; ; d = filepath.Dir(d) {
		if writable, ok := w.mounts[d]; ok {
			return d, writable
		}
		if d == "/" || d == "." {
			return "", false
		}
	}
}

// inWritable reports whether p lies in a writable mount and is not itself
// mounted: a path the program could change, and that needs a mount of its
// own to be protected or pinned.
func (w *walker) inWritable(p string) bool {
	m, writable := w.mountOf(p)
	return writable && m != p
}

// walk looks for protected entries in the tree at root; top says root is
// the workspace, where the home's names are looked for too.
func (w *walker) walk(root string, top bool) error {
	if top {
		for _, n := range ProtectedNames {
			if n.anyDepth {
				continue
			}
			matches, err := filepath.Glob(filepath.Join(root, n.name))
			if err != nil {
				return fmt.Errorf("protected paths: %w", err)
			}
			for _, m := range matches {
				if err := w.entry(root, m); err != nil {
					return err
				}
			}
		}
	}
	return w.tree(root, top)
}

// homeNames records the home's protected names (home/.bashrc, ...) that
// lie strictly inside the writable tree at root, which holds home or lies
// inside it (--rw ~/.config: ~/.config/sbx).
func (w *walker) homeNames(root, home string) error {
	for _, n := range ProtectedNames {
		if n.anyDepth {
			continue
		}
		matches, err := filepath.Glob(filepath.Join(home, n.name))
		if err != nil {
			return fmt.Errorf("protected paths: %w", err)
		}
		for _, m := range matches {
			if m != root && hostfs.Under(m, root) {
				if err := w.entry(root, m); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// tree walks the tree at root for the names protected at any depth.
func (w *walker) tree(root string, top bool) error {
	queue := []string{root}
	for len(queue) > 0 {
		dir := queue[0]
		queue = queue[1:]
		w.dirs++
		if w.dirs > w.lim.Dirs || time.Now().After(w.deadline) {
			fix := "run with a narrower --workspace, or without --write"
			if !top {
				fix = "show it with --ro instead of --rw, or a narrower --rw path"
			}
			return fmt.Errorf("protected paths: the writable trees have more than %d directories, or took more than %s, to search for entries to protect (.git at any depth, ...; stopped in %s); %s", w.lim.Dirs, w.lim.Time, root, fix)
		}
		ents, err := readDir(dir, w.buf, w.ents)
		if errors.Is(err, unix.EACCES) && unix.Faccessat(unix.AT_FDCWD, dir, unix.X_OK, unix.AT_EACCESS) != nil {
			// The walk runs with the invoking user's rights (the
			// program's; under sudo, the fsuid of hostfs.Cred.Do,
			// which AT_EACCESS checks): a directory the user cannot
			// even search holds nothing the program could change.
			// One it can search but not read fails the run below
			// (its entries could be reached by name).
			continue
		}
		if err != nil {
			return fmt.Errorf("protected paths: search %s: %w (let the user read it, or narrow --workspace)", dir, err)
		}
		w.ents = ents
		for _, e := range ents {
			rests := anyDepthNames[e.name]
			p := filepath.Join(dir, e.name)
			matched := false
			for _, rest := range rests {
				matched = matched || rest == ""
				full := filepath.Join(p, rest)
				if rest != "" {
					if _, err := os.Lstat(full); err != nil {
						continue
					}
				}
				if err := w.entry(root, full); err != nil {
					return err
				}
			}
			// The inside of a protected directory is read-only as a
			// whole; the first component of a longer name (.github
			// of .github/workflows) is walked like any directory; a
			// symlink is not followed (its target, if in a tree, is
			// walked where it lies); another mount is walked as a
			// tree of its own if writable.
			_, mounted := w.mounts[p]
			if !matched && e.dir && !prunedDirs[e.name] && !mounted {
				queue = append(queue, p)
			}
		}
	}
	return nil
}

// dirent is one entry of a directory: its name, and whether it is a
// directory (not a symlink to one).
type dirent struct {
	name string
	dir  bool
	ino  uint64 // d_ino: the inode number (confirm with lstat before use)
}

// readDir lists dir (which must not be a symlink) without sorting or
// stat'ing its entries, with buf for getdents64: the walk reads every
// directory of the writable trees, so it pays three system calls per
// directory and nothing per entry, but an lstat where the filesystem
// does not give the type.
func readDir(dir string, buf []byte, out []dirent) ([]dirent, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	out = out[:0]
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "getdents64", Path: dir, Err: err}
		}
		if n <= 0 {
			return out, nil
		}
		// struct linux_dirent64: u64 ino, s64 off, u16 reclen, u8 type,
		// name (NUL-terminated).
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return nil, &os.PathError{Op: "getdents64", Path: dir, Err: unix.EIO}
			}
			ino, typ, name := binary.NativeEndian.Uint64(b[0:8]), b[18], b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			b = b[reclen:]
			if string(name) == "." || string(name) == ".." {
				continue
			}
			e := dirent{name: string(name), dir: typ == unix.DT_DIR, ino: ino}
			if typ == unix.DT_UNKNOWN {
				var st unix.Stat_t
				if err := unix.Lstat(filepath.Join(dir, e.name), &st); err == nil {
					e.dir = st.Mode&unix.S_IFMT == unix.S_IFDIR
				}
			}
			out = append(out, e)
		}
	}
}

// entry records the protected entry p found in the tree at root, or
// refuses it if it (or a directory between root and it) is a symlink.
// A gitfile's git directory is recorded too.
func (w *walker) entry(root, p string) error {
	if w.opened[p] || !w.inWritable(p) {
		return nil // opened, read-only already, or mounted (--ro, --rw)
	}
	for d := p; d != root && hostfs.Under(d, root); d = filepath.Dir(d) {
		fi, err := os.Lstat(d)
		if err != nil && w.end {
			return nil // gone since it was listed
		}
		if err != nil {
			return fmt.Errorf("protected paths: %w", err)
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			continue
		}
		if w.end {
			// The entry itself is a symlink: recorded (it is moved
			// aside, not followed). Below a symlink: not an entry at
			// this path (its target is walked where it lies).
			if d == p {
				w.found = append(w.found, p)
			}
			return nil
		}
		target, _ := os.Readlink(d)
		if r, err := filepath.EvalSymlinks(p); err == nil && w.opened[r] {
			return nil // --rw named its target
		}
		return fmt.Errorf("%w: %s (-> %s) could be replaced by the program with one of its own, which the host would then use; run without --write, or open it deliberately with --rw %s", ErrProtectedSymlink, d, target, p)
	}
	w.found = append(w.found, p)
	if !w.end && filepath.Base(p) == ".git" {
		return w.git(p)
	}
	return nil
}
