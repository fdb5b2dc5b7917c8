package settings

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Globs are expanded in trees a sandbox may write: a pattern must not make
// sbx follow a symlink (a loop of them makes a walk exponential) or read
// without end before the sandbox exists. Every expansion of one file
// shares one budget of directories read, of entries seen and of time (the
// directories bound what a repository of ordinary size needs, node_modules
// included; the entries bound memory; the time bounds a slow filesystem).
var (
	globDirs    = 50000
	globEntries = 1000000
	globTime    = 2 * time.Second
)

// budget is what is left of one file's expansion work.
type budget struct {
	dirs, entries int
	deadline      time.Time
}

func newBudget() *budget {
	return &budget{dirs: globDirs, entries: globEntries, deadline: time.Now().Add(globTime)}
}

// errBudget is wrapped by the error of an expansion over its budget.
var errBudget = errors.New("over budget")

// enter counts one directory read (dir).
func (b *budget) enter(dir string) error {
	b.dirs--
	return b.check(dir)
}

// spend counts one entry seen below dir.
func (b *budget) spend(dir string) error {
	b.entries--
	return b.check(dir)
}

func (b *budget) check(dir string) error {
	if b.dirs < 0 || b.entries < 0 || time.Now().After(b.deadline) {
		return fmt.Errorf("%w: expanding it read more than %d directories or %d entries, or took more than %s (at %s); name the paths instead of a pattern", errBudget, globDirs, globEntries, globTime, dir)
	}
	return nil
}

func hasMeta(s string) bool { return strings.ContainsAny(s, "*?[") }

// globPath expands the absolute pattern p component by component. The
// components before the first one with a pattern are taken as written;
// after it, only real directories are entered (never a symlink to one),
// and a match of the last component may be anything but is not followed.
func globPath(p string, b *budget) ([]string, error) {
	comps := strings.Split(strings.TrimPrefix(filepath.Clean(p), "/"), "/")
	i := slices.IndexFunc(comps, hasMeta)
	cur := []string{"/" + filepath.Join(comps[:i]...)}
	rest := comps[i:]
	for j, c := range rest {
		last := j == len(rest)-1
		var next []string
		for _, dir := range cur {
			if !hasMeta(c) {
				if err := b.spend(dir); err != nil {
					return nil, err
				}
				full := filepath.Join(dir, c)
				if fi, err := os.Lstat(full); err == nil && (last || fi.IsDir()) {
					next = append(next, full)
				}
				continue
			}
			if err := b.enter(dir); err != nil {
				return nil, err
			}
			names, err := readNames(dir)
			if err != nil {
				continue // not a directory, or not readable: no matches, as filepath.Glob
			}
			for _, n := range names {
				if err := b.spend(dir); err != nil {
					return nil, err
				}
				if ok, _ := filepath.Match(c, n); !ok {
					continue
				}
				full := filepath.Join(dir, n)
				if last {
					next = append(next, full)
				} else if fi, err := os.Lstat(full); err == nil && fi.IsDir() {
					next = append(next, full)
				}
			}
		}
		cur = next
	}
	slices.Sort(cur)
	return cur, nil
}

// readNames lists dir, which must be a directory and not a symlink.
func readNames(dir string) ([]string, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), dir)
	defer f.Close()
	return f.Readdirnames(-1)
}

// globName finds every entry below root whose name matches pattern (no
// "/"), without entering a symlink or the inside of a match.
func globName(root, pattern string, b *budget) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := b.spend(filepath.Dir(path)); err != nil {
			return err
		}
		if d.IsDir() {
			if err := b.enter(path); err != nil {
				return err
			}
		}
		if path == root {
			return nil
		}
		if ok, _ := filepath.Match(pattern, d.Name()); ok {
			out = append(out, path)
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("expand: %w", err)
	}
	return out, nil
}
