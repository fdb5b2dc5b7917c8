package stage

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/sbx-sandbox/sbx/hostfs"
)

// expandHome expands a leading "~" or "~/" with home; "~user" forms are not
// expanded (they stay relative names). With home == "" p is returned as is.
func expandHome(p, home string) string {
	if home == "" {
		return p
	}
	if p == "~" {
		return home
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return filepath.Join(home, rest)
	}
	return p
}

// absPath makes a value absolute: "~" expansion, then relative to cwd.
func absPath(v, cwd, home string) string {
	p := expandHome(v, home)
	if !filepath.IsAbs(p) {
		p = filepath.Join(cwd, p)
	}
	return filepath.Clean(p)
}

// DefaultRoots returns the allowed roots before resolution: os.TempDir(),
// /tmp, the agent's configuration tree (Agent.ConfigRoot) and the caller's
// working directory. Project-local files under the cwd are deliberate input.
func DefaultRoots(ag *Agent, o Options) []string {
	roots := []string{os.TempDir(), "/tmp"}
	if ag != nil && ag.ConfigRoot != nil {
		env := o.Env
		if env == nil {
			env = func(string) string { return "" }
		}
		if r := ag.ConfigRoot(env, o.HostHome); r != "" {
			if !filepath.IsAbs(r) {
				r = filepath.Join(o.Cwd, r)
			}
			roots = append(roots, r)
		}
	}
	if o.Cwd != "" {
		roots = append(roots, o.Cwd)
	}
	return roots
}

// resolveRoots resolves each root's symlinks and drops the ones that do not
// exist, duplicates, and "/" (which would allow every file).
func resolveRoots(raw []string) (roots, dropped []string) {
	seen := map[string]bool{}
	for _, r := range raw {
		if r == "" || !filepath.IsAbs(r) {
			continue
		}
		real, err := filepath.EvalSymlinks(r)
		if err != nil {
			continue
		}
		if real == "/" {
			dropped = append(dropped, r)
			continue
		}
		if !seen[real] {
			seen[real] = true
			roots = append(roots, real)
		}
	}
	return roots, dropped
}

// under reports whether the resolved path p is one of roots or beneath one.
func under(p string, roots []string) bool {
	for _, r := range roots {
		if hostfs.Within(p, r) {
			return true
		}
	}
	return false
}

// isSessionPath is pi's test for "<path|id>": a path if it holds "/" or ends
// in ".jsonl".
func isSessionPath(v string) bool {
	return strings.Contains(v, "/") || strings.HasSuffix(v, ".jsonl")
}

// maxLinks bounds the symlinks followed while resolving one path, as the
// kernel's own limit does.
const maxLinks = 40

// resolveIn resolves the absolute path p as filepath.EvalSymlinks does, but
// refuses (a *skipError) to follow a symlink that lies inside one of the
// trees a sandbox can write (Options.Writable) and points out of that tree:
// a sandbox, this run's or a concurrent one of the same workspace, could
// have planted it to aim staging and copy-back at a host directory of its
// choosing. A symlink inside such a tree that stays inside it is followed
// (the sandbox could write the target anyway). Missing components give
// fs.ErrNotExist, as EvalSymlinks does.
func resolveIn(p string, trees []string) (string, error) {
	parts := strings.Split(filepath.Clean(p), "/")
	cur := "/"
	links := 0
	for len(parts) > 0 {
		c := parts[0]
		parts = parts[1:]
		if c == "" || c == "." {
			continue
		}
		next := filepath.Join(cur, c) // ".." goes up lexically: cur has no symlink
		fi, err := os.Lstat(next)
		if err != nil {
			return "", &os.PathError{Op: "lstat", Path: next, Err: errors.Unwrap(err)}
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return "", &os.PathError{Op: "resolve", Path: p, Err: syscall.ELOOP}
		}
		t, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		dest := t
		if !filepath.IsAbs(t) {
			dest = filepath.Join(cur, t)
		}
		for _, w := range trees {
			if w != "" && hostfs.Within(next, w) && next != w && !hostfs.Within(filepath.Clean(dest), w) {
				return "", skipf("%s is a symlink inside %s, which a sandbox can write, and leads out of it", next, w)
			}
		}
		if filepath.IsAbs(t) {
			cur = "/"
		}
		parts = append(strings.Split(t, "/"), parts...)
	}
	return cur, nil
}
