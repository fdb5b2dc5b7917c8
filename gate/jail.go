package gate

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/sbx-sandbox/sbx/hostfs"

	"github.com/sbx-sandbox/sbx/internal/runid"
)

// ResolveWorkspace checks a workspace and a working directory on disk and
// returns their real paths. workspace must be an absolute path of an existing
// directory (symbolic links in it are followed: it is the caller's choice);
// cwd, optional, is resolved inside it by ResolveIn. Errors are *RejectError
// with Field "workspace" or "cwd".
func ResolveWorkspace(workspace, cwd string) (root, dir string, err error) {
	if err := checkWorkspaceForm(workspace); err != nil {
		return "", "", err
	}
	root, err = filepath.EvalSymlinks(workspace)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", "", rejectErr("workspace", err, "workspace %q does not exist", workspace)
		}
		return "", "", rejectErr("workspace", err, "workspace %q: %v", workspace, unwrapPath(err))
	}
	fi, err := os.Stat(root)
	if err != nil {
		return "", "", rejectErr("workspace", err, "workspace %q: %v", workspace, unwrapPath(err))
	}
	if !fi.IsDir() {
		return "", "", rejectErr("workspace", syscall.ENOTDIR, "workspace %q is not a directory", workspace)
	}
	dir, err = resolveIn("cwd", root, cwd)
	if err != nil {
		return "", "", err
	}
	return root, dir, nil
}

// ResolveIn resolves rel, a path relative to root, to a real path inside
// root, the way the in-browser harness jails its workspace:
//
//   - rel must be relative, free of NUL, and stay inside root once cleaned
//     lexically: "a/../b" is root/b, while "..", "../x" and "../ws-sibling"
//     are escapes;
//   - the cleaned path is then walked one component at a time, following
//     symbolic links as the kernel would; a link whose target leaves root
//     (root is only left towards its own ancestors while a link's target is
//     walked back into it) is an escape, decided before the outside path is
//     ever looked at;
//   - root itself or root + "/" ... is inside; a sibling sharing a prefix
//     ("/w/thread-12" or "/w/thread-1-evil" for root "/w/thread-1") is not;
//   - the result must be a directory, and its realpath is checked once more.
//
// An escape is a *RejectError wrapping ErrEscape ("path escapes workspace:
// permission denied") whether or not the outside path exists. A missing
// directory inside root wraps fs.ErrNotExist. root must already be a real
// path (ResolveWorkspace's root); the empty rel is root.
func ResolveIn(root, rel string) (string, error) {
	return resolveIn("path", root, rel)
}

func resolveIn(field, root, rel string) (string, error) {
	if err := checkRelForm(field, rel); err != nil {
		return "", err
	}
	root = filepath.Clean(root)
	if !hostfs.Within(filepath.Join(root, rel), root) {
		return "", escape(field, rel)
	}
	cur := root
	parts := splitPath(filepath.Clean(rel))
	links := 0
	for len(parts) > 0 {
		p := parts[0]
		parts = parts[1:]
		switch p {
		case "", ".":
			continue
		case "..":
			// cur holds no symbolic link, so its parent is its lexical parent.
			cur = filepath.Dir(cur)
			if !hostfs.Within(cur, root) && !ancestor(cur, root) {
				return "", escape(field, rel)
			}
			continue
		}
		next := filepath.Join(cur, p)
		if !hostfs.Within(next, root) && !ancestor(next, root) {
			return "", escape(field, rel) // decided without touching next
		}
		fi, err := os.Lstat(next)
		if err != nil {
			switch {
			case !hostfs.Within(next, root):
				return "", escape(field, rel)
			case errors.Is(err, fs.ErrNotExist):
				return "", rejectErr(field, fs.ErrNotExist, "%s %q: no such directory in the workspace", field, rel)
			case errors.Is(err, syscall.ENOTDIR):
				return "", rejectErr(field, syscall.ENOTDIR, "%s %q: not a directory", field, rel)
			}
			return "", rejectErr(field, err, "%s %q: %v", field, rel, unwrapPath(err))
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			links++
			if links > MaxSymlinks {
				return "", rejectErr(field, syscall.ELOOP, "%s %q: too many levels of symbolic links", field, rel)
			}
			target, err := os.Readlink(next)
			if err != nil {
				return "", rejectErr(field, err, "%s %q: %v", field, rel, unwrapPath(err))
			}
			if filepath.IsAbs(target) {
				cur = "/"
			}
			parts = append(splitPath(target), parts...)
			continue
		}
		if !fi.IsDir() {
			return "", rejectErr(field, syscall.ENOTDIR, "%s %q: not a directory", field, rel)
		}
		cur = next
	}
	if !hostfs.Within(cur, root) {
		return "", escape(field, rel)
	}
	// Check the result once more as the kernel sees it now.
	real, err := filepath.EvalSymlinks(cur)
	if err != nil {
		return "", rejectErr(field, err, "%s %q: %v", field, rel, unwrapPath(err))
	}
	if !hostfs.Within(real, root) {
		return "", escape(field, rel)
	}
	return real, nil
}

// ancestor reports whether a is a strict ancestor of p.
func ancestor(a, p string) bool {
	if a == p {
		return false
	}
	if a == "/" {
		return true
	}
	return strings.HasPrefix(p, a+"/")
}

func splitPath(p string) []string {
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// unwrapPath drops the path from an *fs.PathError, which the messages
// already name.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ValidName checks a name that will become a directory or file name (a run
// id, a scope): one to MaxNameBytes characters from A-Z a-z 0-9 '.' '_' '-',
// and not "." or "..". A bad name is rejected, never rewritten. The error is a
// *RejectError with Field "name".
func ValidName(s string) error {
	switch {
	case s == "":
		return reject("name", "name is empty")
	case s == "." || s == "..":
		return reject("name", "name %q is not allowed", s)
	case len(s) > MaxNameBytes:
		return reject("name", "name is %d bytes long; the limit is %d", len(s), MaxNameBytes)
	}
	if !runid.Valid(s) {
		return reject("name", "name %q may hold only A-Z a-z 0-9 . _ -", s)
	}
	return nil
}
