package sandbox

import (
	"io/fs"
	"path/filepath"
	"slices"
	"syscall"
)

// RootOnly lists the entries under dir that a process with uid or gid 0
// may read only because of that id, while every other user may not:
// regular files readable by owner 0 or group 0 but not by others, and
// directories others cannot search (listed once, not descended into).
// Paths already in [MaskedPaths] and what lies below them are left out.
//
// A program that sbx runs as uid 0 (root invoked sbx without sudo) owns
// root's files without any capability, so these are masked for it like
// the fixed list (Spec.Masked); for anyone else, file modes already keep
// them unreadable. Unreadable parts of dir are skipped.
func RootOnly(dir string) []string {
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if slices.Contains(MaskedPaths, p) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return nil // symlinks, sockets, devices: their modes say nothing
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		if rootOnly(fi.Mode().Perm(), st.Uid, st.Gid, d.IsDir()) {
			out = append(out, p)
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
	return out
}

// rootOnly reports whether mode (of a file owned by uid:gid) lets owner or
// group 0 read (a directory: search) what it keeps from others.
func rootOnly(mode fs.FileMode, uid, gid uint32, dir bool) bool {
	r := fs.FileMode(0o4) // read for files, search for directories
	if dir {
		r = 0o1
	}
	if mode&r != 0 {
		return false
	}
	return uid == 0 && mode&(r<<6) != 0 || gid == 0 && mode&(r<<3) != 0
}
