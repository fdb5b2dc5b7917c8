package protect

// What git runs hooks from besides a .git directory: the git directory a
// gitfile names, a common directory, core.hooksPath (see walker.git).

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// git records what else a repository whose .git entry is p runs hooks
// from. A gitfile (a submodule's or a worktree's) names the git directory
// that holds the hooks and config, and a git directory may name a common
// directory (commondir) that holds them; those lying in writable trees are
// recorded (git's bare-repo layout puts one in a sibling, "gitdir:
// ./.bare"). In each git directory, wherever it lies, core.hooksPath may
// name a hooks directory in a writable tree (.githooks, .husky/_):
// recorded too. A path through a symlink in a writable tree is refused
// like a symlinked entry.
func (w *walker) git(p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return fmt.Errorf("protected paths: %w", err)
	}
	gitDirs := []string{p}
	if fi.Mode().IsRegular() {
		dir, err := w.readGitfile(p)
		if err != nil {
			return err
		}
		if dir == "" {
			return nil // not a gitfile git would use: nothing more to protect
		}
		gd, err := w.gitPointer(p, dir, "the git directory")
		if gd == "" || err != nil {
			return err
		}
		gitDirs = []string{gd}
	}
	cd, err := w.readGitFile(filepath.Join(gitDirs[0], "commondir"))
	if err != nil {
		return err
	}
	if cd != nil {
		common, err := w.gitPointer(filepath.Join(gitDirs[0], "commondir"), strings.TrimSpace(string(cd)), "the common git directory")
		if err != nil {
			return err
		}
		if common != "" {
			gitDirs = append(gitDirs, common)
		}
	}
	for _, gd := range gitDirs {
		if err := w.hooksPath(p, gd); err != nil {
			return err
		}
	}
	return nil
}

// gitPointer resolves dir, named by the file from (a gitfile, a
// commondir file; relative to from's directory), and records it if it lies
// in a writable tree. It returns the resolved path, or "" when dir does
// not exist (git then fails and runs no hook).
func (w *walker) gitPointer(from, dir, what string) (string, error) {
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(filepath.Dir(from), dir)
	}
	dir = filepath.Clean(dir)
	r, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", nil
	}
	if w.inWritable(dir) && !w.opened[dir] && !w.opened[r] {
		if r != dir {
			return "", fmt.Errorf("%w: %s %s named by %s lies through a symlink, which the program could replace; run without --write, or open it deliberately with --rw %s", ErrProtectedSymlink, what, dir, from, dir)
		}
		w.found = append(w.found, dir)
	}
	return r, nil
}

// hooksPath records the directory core.hooksPath names in the config of
// git directory gd, for the repository whose .git entry is dotgit (a
// relative path is taken from the top of its working tree, as git does).
// A hooks directory that does not exist yet in a tree is refused: the
// program could create it and fill it with hooks. Only the config files
// themselves are read: a hooksPath set in an included file, or in the
// user's or the system's config, is not seen (see docs/security-model.md).
func (w *walker) hooksPath(dotgit, gd string) error {
	for _, name := range []string{"config", "config.worktree"} {
		data, err := w.readGitFile(filepath.Join(gd, name))
		if err != nil {
			return err
		}
		if data == nil {
			continue
		}
		hp := parseHooksPath(string(data))
		if hp == "" || strings.HasPrefix(hp, "~") {
			continue // unset, or in the host user's home, which is not visible
		}
		if !filepath.IsAbs(hp) {
			hp = filepath.Join(filepath.Dir(dotgit), hp)
		}
		hp = filepath.Clean(hp)
		if !w.inWritable(hp) || w.opened[hp] {
			continue
		}
		r, err := filepath.EvalSymlinks(hp)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("protected paths: core.hooksPath of %s names %s, which does not exist: the program could create it with hooks of its own; create it before the run (mkdir %s), or open it deliberately with --rw", gd, hp, hp)
		case err != nil:
			return fmt.Errorf("protected paths: core.hooksPath of %s: %w", gd, err)
		case r != hp && !w.opened[r]:
			return fmt.Errorf("%w: core.hooksPath of %s names %s, through a symlink, which the program could replace; run without --write, or open it deliberately with --rw %s", ErrProtectedSymlink, gd, hp, hp)
		case r == hp:
			w.found = append(w.found, hp)
		}
	}
	return nil
}

// parseHooksPath returns the last core.hooksPath of a git config file's
// text, or "". It reads git's syntax as far as a path needs: sections
// and keys case-insensitively, comments after # or ;, a quoted value.
func parseHooksPath(cfg string) string {
	var section, val string
	for _, line := range strings.Split(cfg, "\n") {
		l := strings.TrimSpace(line)
		if strings.HasPrefix(l, "[") {
			end := strings.IndexByte(l, ']')
			if end < 0 {
				continue
			}
			section = strings.ToLower(strings.TrimSpace(l[1:end]))
			l = strings.TrimSpace(l[end+1:]) // "[core] hooksPath = x"
		}
		k, v, ok := strings.Cut(l, "=")
		if section != "core" || !ok || !strings.EqualFold(strings.TrimSpace(k), "hookspath") {
			continue
		}
		val = configValue(v)
	}
	return val
}

// configValue is a git config value: quotes removed, a comment outside
// quotes cut off, outer blanks trimmed.
func configValue(v string) string {
	var b strings.Builder
	quoted := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"':
			quoted = !quoted
		case c == '\\' && i+1 < len(v):
			i++
			b.WriteByte(v[i])
		case (c == '#' || c == ';') && !quoted:
			return strings.TrimSpace(b.String())
		default:
			b.WriteByte(c)
		}
	}
	return strings.TrimSpace(b.String())
}

// maxGitFile bounds what is read of a gitfile, commondir or config.
const maxGitFile = 1 << 20

// readGitFile reads a small file of git's (a gitfile, commondir, config)
// as git would use it, or returns nil when there is none to use. A file in
// a writable tree may have been planted by an earlier run (or replaced by
// one still going), so it is opened without following a symlink in its
// last component (such a symlink refuses the run, as a symlinked entry
// does) and without blocking: anything but a regular file (a FIFO, a
// device, a directory) is not read and counts as absent, which git would
// not use either. Outside writable trees the file is read as git reads it.
func (w *walker) readGitFile(p string) ([]byte, error) {
	flags := os.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC
	if w.inWritable(p) {
		flags |= unix.O_NOFOLLOW
	}
	f, err := os.OpenFile(p, flags, 0)
	switch {
	case errors.Is(err, unix.ELOOP):
		return nil, fmt.Errorf("%w: %s, which git reads for hooks, is a symlink the program could replace; run without --write, or open it deliberately with --rw %s", ErrProtectedSymlink, p, filepath.Dir(p))
	case err != nil:
		return nil, nil // absent or unreadable: git would not use it either
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, nil
	}
	data, err := io.ReadAll(io.LimitReader(f, maxGitFile))
	if err != nil {
		return nil, nil
	}
	return data, nil
}

// readGitfile returns the path a gitfile names ("gitdir: PATH" on its
// first line), or "" when p is not one.
func (w *walker) readGitfile(p string) (string, error) {
	data, err := w.readGitFile(p)
	if err != nil || data == nil {
		return "", err
	}
	return parseGitfile(string(data)), nil
}

// parseGitfile returns the path of a gitfile's first line, or "".
func parseGitfile(text string) string {
	line, _, _ := strings.Cut(text, "\n")
	dir, ok := strings.CutPrefix(strings.TrimSuffix(line, "\r"), "gitdir: ")
	if !ok {
		return ""
	}
	return strings.TrimSpace(dir)
}
