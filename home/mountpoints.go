package home

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/hostfs"
	"github.com/sbx-sandbox/sbx/sandbox"
)

// A path mounted below the home inside the sandbox (a profile's
// ~/.pi/agent/settings.json, a discovered ~/.npm-global, a workspace below
// the user's home, a staged dir, a --rw copy) needs a mount point in the
// host directory behind the home. libcontainer makes missing ones itself,
// as the user it runs as: root, when sbx runs as root, which left
// root-owned directories and files in the user's sbx home that neither the
// program nor the user could change. So sbx makes them first, with the
// user's identity, from the home's descriptor downward without following
// any symlink (hostfs.Dir), and libcontainer finds them there.

// homeMount is a mount destination below the home: rel is its path below
// the home's host directory.
type homeMount struct {
	rel string
	dir bool
}

// homeMountPoints returns the mount destinations of spec that lie in its
// home: below HomeInside and not below another mount that is itself below
// HomeInside (that mount brings its own).
func homeMountPoints(spec *sandbox.Spec) []homeMount {
	type dest struct {
		path string
		dir  func() bool
	}
	isDir := func(p string) func() bool {
		return func() bool { fi, err := os.Stat(p); return err == nil && fi.IsDir() }
	}
	yes := func() bool { return true }
	dests := []dest{{spec.Workspace, yes}}
	for _, p := range spec.Pinned {
		dests = append(dests, dest{p, yes})
	}
	for _, ps := range [][]string{spec.Protected, spec.ReadOnly, spec.ReadWrite} {
		for _, p := range ps {
			dests = append(dests, dest{p, isDir(p)})
		}
	}
	for _, b := range spec.RunBinds {
		dests = append(dests, dest{b.Destination, isDir(b.Source)})
	}
	for _, h := range spec.Hidden {
		d := h.Dir
		dests = append(dests, dest{h.Path, func() bool { return d }})
	}
	below := func(p, root string) bool { return p != root && hostfs.Within(p, root) }
	for _, d := range dests {
		if d.path == spec.HomeInside {
			return nil // mounted over the home: nothing of it shows
		}
	}
	var out []homeMount
	for _, d := range dests {
		if !below(d.path, spec.HomeInside) {
			continue
		}
		covered := false
		for _, m := range dests {
			if below(d.path, m.path) && below(m.path, spec.HomeInside) {
				covered = true
				break
			}
		}
		if covered {
			continue
		}
		rel, err := filepath.Rel(spec.HomeInside, d.path)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		out = append(out, homeMount{rel: filepath.ToSlash(rel), dir: d.dir()})
	}
	return out
}

// MakeMountPoints creates, with the user's identity (c), the mount points of
// spec that lie in its home (see homeMountPoints) and are missing: empty
// directories (0700) and empty files (0600). An existing one is kept when
// it is of the right kind; a symlink on the way (planted by a sandbox) is
// never followed and fails the run.
func MakeMountPoints(c hostfs.Cred, spec *sandbox.Spec) error {
	mps := homeMountPoints(spec)
	if len(mps) == 0 {
		return nil
	}
	return c.Do(func() error {
		home, err := hostfs.OpenDir(spec.Home, nil)
		if err != nil {
			return fmt.Errorf("open the sandbox home %s: %w", spec.Home, err)
		}
		defer home.Close()
		for _, mp := range mps {
			err := makeMountPoint(home, mp)
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
				return fmt.Errorf("create the mount point of %s in the sandbox home %s: its mount point in the sbx home is a symlink or not a %s (%w); remove %s and run again",
					filepath.Join(spec.HomeInside, mp.rel), spec.Home, fileKind(mp.dir), err, filepath.Join(spec.Home, mp.rel))
			}
			if err != nil {
				return fmt.Errorf("create the mount point of %s in the sandbox home %s: %w (remove what is there, or the sandbox home, and run again)",
					filepath.Join(spec.HomeInside, mp.rel), spec.Home, err)
			}
		}
		return nil
	})
}

func makeMountPoint(home *hostfs.Dir, mp homeMount) error {
	if dir := filepath.Dir(mp.rel); dir != "." {
		if err := home.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	if mp.dir {
		err := home.Mkdir(mp.rel, 0o700)
		if errors.Is(err, fs.ErrExist) {
			var fi fs.FileInfo
			if fi, err = home.Lstat(mp.rel); err == nil && !fi.IsDir() {
				err = errors.New("not a directory")
			}
		}
		return err
	}
	f, err := home.OpenFile(mp.rel, unix.O_RDONLY|unix.O_CREAT|unix.O_NONBLOCK, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = errors.New("not a regular file")
	}
	return err
}

// RemoveMountPoint removes the empty directory that MakeMountPoints made
// in the home for inside (a path below HomeInside), with the user's
// identity (c); one that is not empty (written while unmounted) is left.
func RemoveMountPoint(c hostfs.Cred, spec *sandbox.Spec, inside string) {
	rel, err := filepath.Rel(spec.HomeInside, inside)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return
	}
	_ = c.Do(func() error {
		home, err := hostfs.OpenDir(spec.Home, nil)
		if err != nil {
			return err
		}
		defer home.Close()
		if fi, err := home.Lstat(filepath.ToSlash(rel)); err != nil || !fi.IsDir() {
			return err
		}
		return home.Remove(filepath.ToSlash(rel))
	})
}

func fileKind(dir bool) string {
	if dir {
		return "directory"
	}
	return "file"
}
