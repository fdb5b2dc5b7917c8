package gate

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/hostfs"
)

// Scope is what the harness, never the request, lets a request reach
// beyond its workspace. A model fills the request; the harness starts sbx
// exec with its flags, so only the harness can widen what a request may
// name. The zero Scope allows no ro path and no staging.
type Scope struct {
	// ReadOnlyRoots are the directories a request's ro paths must lie in
	// (each root itself or beneath it), as the harness named them (sbx
	// exec --ro-root). They are compared by identity (device and inode),
	// never by name.
	ReadOnlyRoots []string
	// Stage lets a request ask for staging ("stage": true; sbx exec
	// --allow-stage).
	Stage bool
	// Cred is the identity paths are resolved with: the invoking user's.
	Cred hostfs.Cred
}

// maxDepth bounds the components of a path walked by resolveScoped.
const maxDepth = 256

// CheckIn is Check with the harness's scope: the ro paths must lie inside
// s.ReadOnlyRoots (resolved by resolveScoped, not by ResolveReadOnly) and
// "stage" needs s.Stage. The ro rules come before anything else on disk,
// so that a request cannot learn what exists outside the roots.
func (r Request) CheckIn(s Scope) (Checked, error) {
	if err := r.CheckStatic(); err != nil {
		return Checked{}, err
	}
	if r.Stage && !s.Stage {
		return Checked{}, reject("stage", `"stage": true is refused: the harness did not enable staging (sbx exec --allow-stage)`)
	}
	ro, err := s.resolveReadOnly(r.ReadOnly)
	if err != nil {
		return Checked{}, err
	}
	root, dir, err := ResolveWorkspace(r.Workspace, r.Cwd)
	if err != nil {
		return Checked{}, err
	}
	return Checked{
		ReadOnly: ro,
		Request:  r,
		Root:     root,
		Dir:      dir,
		Timeout:  r.Timeout(),
		Writable: r.Writable(),
	}, nil
}

// resolveReadOnly checks each ro path against the roots and returns them
// cleaned: each is walked from / one component at a time as s.Cred,
// following no symbolic link, and must be an existing directory or regular
// file with a root among itself and its ancestors as walked (device and
// inode). A path outside every root is refused with the same message
// whether or not it exists.
func (s Scope) resolveReadOnly(ro []string) ([]string, error) {
	if len(ro) == 0 {
		return nil, nil
	}
	if len(s.ReadOnlyRoots) == 0 {
		return nil, reject("ro", "ro is refused: the harness allows no read-only paths (sbx exec --ro-root DIR)")
	}
	var out []string
	err := s.Cred.Do(func() error {
		roots, err := rootIDs(s.ReadOnlyRoots)
		if err != nil {
			return err
		}
		for i, p := range ro {
			clean, err := checkScoped(i, p, roots)
			if err != nil {
				return err
			}
			out = append(out, clean)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// rootIDs opens each root (the harness's own choice: symbolic links in it
// are followed) and returns their identities. A root that cannot be opened
// is the harness's error, which rejects the request.
func rootIDs(roots []string) (map[hostfs.FileID]bool, error) {
	ids := map[hostfs.FileID]bool{}
	for _, r := range roots {
		var st unix.Stat_t
		if err := unix.Stat(r, &st); err != nil {
			return nil, reject("ro", "sbx exec --ro-root %s: %v", r, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return nil, reject("ro", "sbx exec --ro-root %s: not a directory", r)
		}
		ids[hostfs.FileID{Dev: st.Dev, Ino: st.Ino}] = true
	}
	return ids, nil
}

// checkScoped walks the ro path p (index i) from / without following any
// symbolic link and checks it against roots.
func checkScoped(i int, p string, roots map[hostfs.FileID]bool) (string, error) {
	clean := filepath.Clean(p)
	ids, mode, werr := walkIDs(clean)
	inside := false
	for _, id := range ids {
		if roots[id] {
			inside = true
			break
		}
	}
	if !inside {
		return "", rejectErr("ro", fs.ErrPermission, "ro[%d] %q is outside the directories the harness allows (sbx exec --ro-root)", i, p)
	}
	switch {
	case errors.Is(werr, fs.ErrNotExist):
		return "", rejectErr("ro", werr, "ro[%d] %q does not exist", i, p)
	case errors.Is(werr, syscall.ELOOP):
		return "", rejectErr("ro", werr, "ro[%d] %q passes through a symbolic link (name the real path)", i, p)
	case werr != nil:
		return "", rejectErr("ro", werr, "ro[%d] %q: %v", i, p, unwrapPath(werr))
	case mode != unix.S_IFDIR && mode != unix.S_IFREG:
		return "", rejectErr("ro", syscall.EINVAL, "ro[%d] %q is neither a directory nor a regular file", i, p)
	}
	return clean, nil
}

// walkIDs opens the clean absolute path p from / one component at a time
// (O_PATH, O_NOFOLLOW: a symbolic link ends the walk with ELOOP) and
// returns the identities of / and of each component it reached, the file
// type of the last one, and why the walk stopped short, if it did. Each
// component is opened from the one before, so the identities are one
// chain of ancestors even while the tree changes.
func walkIDs(p string) (ids []hostfs.FileID, mode uint32, err error) {
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, 0, &os.PathError{Op: "open", Path: "/", Err: err}
	}
	defer func() { unix.Close(fd) }()
	st, err := fstat(fd, "/")
	if err != nil {
		return nil, 0, err
	}
	ids = append(ids, hostfs.FileID{Dev: st.Dev, Ino: st.Ino})
	mode = st.Mode & unix.S_IFMT
	cur := "/"
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	if len(parts) > maxDepth {
		return ids, mode, &os.PathError{Op: "open", Path: p, Err: syscall.ENAMETOOLONG}
	}
	for _, c := range parts {
		if c == "" {
			continue
		}
		cur = filepath.Join(cur, c)
		if mode != unix.S_IFDIR {
			return ids, mode, &os.PathError{Op: "open", Path: cur, Err: syscall.ENOTDIR}
		}
		nfd, err := unix.Openat(fd, c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return ids, mode, &os.PathError{Op: "open", Path: cur, Err: err}
		}
		unix.Close(fd)
		fd = nfd
		st, err := fstat(fd, cur)
		if err != nil {
			return ids, mode, err
		}
		mode = st.Mode & unix.S_IFMT
		if mode == unix.S_IFLNK {
			return ids, mode, &os.PathError{Op: "open", Path: cur, Err: syscall.ELOOP}
		}
		ids = append(ids, hostfs.FileID{Dev: st.Dev, Ino: st.Ino})
	}
	return ids, mode, nil
}

func fstat(fd int, name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return st, &os.PathError{Op: "fstat", Path: name, Err: err}
	}
	return st, nil
}
