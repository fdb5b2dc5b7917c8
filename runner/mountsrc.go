package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/sbx-sandbox/sbx/hostfs"
	"github.com/sbx-sandbox/sbx/mountsrc"
	"github.com/sbx-sandbox/sbx/sandbox"
	"golang.org/x/sys/unix"
)

// Every host path a run mounts is used by what it is, not by its name.
// libcontainer takes a bind's source as a path, which runc init resolves
// again, as root and following symlinks, in a copy of the host's mount
// namespace; a program of another run that can write a parent of that
// path (a concurrent sandbox) can exchange it for a symlink to "/"
// between sbx's check and the mount (renameat2 RENAME_EXCHANGE). So:
//
//   - each path is resolved once, with the invoking user's rights, into
//     an O_PATH descriptor opened with no symlink followed at any
//     component (hostfs.Cred.Hold); the refusals of hostpaths.go are
//     decided on that descriptor's real path and file system, and the
//     descriptor's identity (device, inode) is recorded. The descriptors
//     stay open for the run, so no inode number is reused meanwhile;
//   - once libcontainer has set up the mounts and before the program
//     starts, every bind's destination is looked up inside the sandbox
//     (through /proc/PID/root, with RESOLVE_IN_ROOT and no symlink
//     followed) and must be the recorded file; any other ends the run
//     (verifyMounts). A bind shows its source's root inode on the
//     source's device, so a swapped source shows as another identity;
//   - mount points that runc would otherwise create inside the sbx home,
//     which every run of the workspace can write, are created first, as
//     the user and without following a symlink (home.MakeMountPoints).
//
// Verifying after the mount was chosen over mounting from the descriptor
// itself: runc init runs in a new mount namespace, where a
// /proc/self/fd/N source of the host's namespace fails do_loopback's
// check (EINVAL), and libcontainer's API takes only a source path, so a
// descriptor-based bind would need a detached mount (open_tree) moved
// onto a root-only staging directory that runc then binds by name again.
// The check after the setup covers every bind with one rule, in root and
// rootless runs alike, and nothing runs in the sandbox before it passes.

// ErrReplaced is wrapped by the error of a run whose mount sources were
// replaced while the sandbox was set up (see mountsrc.ErrReplaced).
var ErrReplaced = mountsrc.ErrReplaced

// holdPath makes p absolute (against cwd), resolves and opens it once as
// the invoking user (see hostfs.Cred.Hold), checks that it is an existing
// directory (or regular file, when files is true), and keeps it in o.held.
func (o *Options) holdPath(what, p, cwd string, files bool) (*hostfs.Held, error) {
	if p == "" {
		return nil, fmt.Errorf("%s: empty path", what)
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(cwd, p)
	}
	h, err := o.cred.Hold(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s %s: no such file or directory", what, p)
	case errors.Is(err, hostfs.ErrChanged):
		return nil, fmt.Errorf("%s %s: %w; not running", what, p, hostfs.ErrChanged)
	case err != nil:
		return nil, fmt.Errorf("%s %s: %w", what, p, err)
	}
	if h.Mode != fs.ModeDir && !(files && h.Mode == 0) {
		h.Close()
		return nil, fmt.Errorf("%s %s: not a directory", what, p)
	}
	o.keep(h)
	return h, nil
}

// keep records h as the source of its path (the first one held wins:
// the same path named twice is the same file).
func (o *Options) keep(h *hostfs.Held) { o.keepAs(h.Path, h) }

// keepAs records h as the source named p.
func (o *Options) keepAs(p string, h *hostfs.Held) {
	if o.held == nil {
		o.held = map[string]*hostfs.Held{}
	}
	if _, ok := o.held[p]; ok {
		h.Close()
		return
	}
	o.held[p] = h
}

// releaseHeld closes the descriptors of the run's mount sources.
func (o *Options) releaseHeld() {
	for _, h := range o.held {
		h.Close()
	}
	o.held = nil
}

// holdRest holds the bind sources of spec that resolvePaths did not (sbx's
// own home, a throwaway home, the run's resolv.conf and mask file,
// discovered command prefixes): each with the rights of whoever owns it
// (sbx's state dir is sbx's own), so that the check after the setup has
// an identity for every bind. Each must still be at its name (sbx made
// it, or checked it, by that name), and an extra --ro or --rw path (a
// discovered prefix) passes the checks of resolvePaths on its descriptor.
func (o *Options) holdRest(spec *sandbox.Spec) error {
	binds := spec.Binds()
	if spec.HiddenFile != "" {
		// The empty file masked files show (see verifyHidden).
		binds = append(binds, sandbox.Bind{Source: spec.HiddenFile})
	}
	var pol *hostPolicy
	for _, b := range binds {
		if _, ok := o.held[b.Source]; ok {
			continue
		}
		if _, ok := o.protect.ID(b.Source); ok {
			continue
		}
		cred := o.cred
		if hostfs.Under(b.Source, hostfs.ResolvePrefix(o.StateDir)) || hostfs.Under(b.Source, o.StateDir) {
			cred = hostfs.Cred{UID: os.Geteuid(), GID: os.Getegid()}
		}
		h, err := cred.Hold(b.Source)
		if err != nil {
			return fmt.Errorf("mount %s: %w", b.Source, err)
		}
		if h.Path != b.Source && !o.tmpHomeIn(spec, b, h.Path) {
			// sbx made these paths, or checked them (discovered
			// prefixes), by that name: a symlink there now was
			// planted since.
			h.Close()
			return fmt.Errorf("mount %s: %w (now %s); not running", b.Source, hostfs.ErrChanged, h.Path)
		}
		if slices.Contains(spec.ReadOnly, b.Source) || slices.Contains(spec.ReadWrite, b.Source) {
			if pol == nil {
				p, err := newHostPolicy(o.StateDir, o.who.Home)
				if err != nil {
					h.Close()
					return err
				}
				pol = &p
			}
			field := "--ro"
			if b.Writable {
				field = "--rw"
			}
			if err := pol.check(hostPath{field: field, path: h.Path, writable: b.Writable, fsType: h.FSType}); err != nil {
				h.Close()
				return err
			}
		}
		// Held under the name the spec gives it, which is what the
		// check after the setup looks up.
		o.keepAs(b.Source, h)
	}
	return nil
}

// tmpHomeIn reports whether real is where the throwaway home of spec (b)
// lies once the symlinks of $TMPDIR are resolved: the home is a fresh
// directory of a random name directly in $TMPDIR, which no sandbox can
// write.
func (o *Options) tmpHomeIn(spec *sandbox.Spec, b sandbox.Bind, real string) bool {
	return o.Home == HomeTmp && b.Source == spec.Home &&
		real == filepath.Join(hostfs.ResolvePrefix(filepath.Dir(b.Source)), filepath.Base(b.Source))
}

// verifyMounts checks, once the sandbox's mounts are in place and before
// its program starts, that every bind of spec shows at its destination
// the file sbx checked (see the top of this file).
func (o *Options) verifyMounts(spec *sandbox.Spec, pid int) error {
	if skipMountCheck() {
		return nil
	}
	var want []mountsrc.Expected
	for _, b := range spec.Binds() {
		e := mountsrc.Expected{Path: b.Destination}
		if h, ok := o.held[b.Source]; ok {
			e.ID = h.ID
		} else if id, ok := o.protect.ID(b.Source); ok {
			e.ID = id
		} else {
			return fmt.Errorf("mount %s: sbx has no identity of its source %s to check it by; not running", b.Destination, b.Source)
		}
		want = append(want, e)
	}
	if err := mountsrc.CheckInRoot(pid, want); err != nil {
		return err
	}
	return o.verifyHidden(spec, pid)
}

// verifyHidden checks that each masked path (sbx run --mask) shows the
// mask in the sandbox: runc mounts it by its name inside the sandbox's
// tree, following symlinks there, so a directory of a writable tree
// swapped for a symlink would put the mask elsewhere and leave the
// content visible. A masked file must be the run's empty file; a masked
// directory the root of a tmpfs of mode 0000.
func (o *Options) verifyHidden(spec *sandbox.Spec, pid int) error {
	root, err := mountsrc.OpenRoot(pid)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, h := range spec.Hidden {
		if slices.ContainsFunc(spec.Hidden, func(d sandbox.Hidden) bool {
			return d.Dir && d.Path != h.Path && hostfs.Under(h.Path, d.Path)
		}) {
			continue // inside a masked directory: that mask hides it
		}
		if !hiddenInPlace(root, h, o.held[spec.HiddenFile]) {
			return fmt.Errorf("masked path %s in the sandbox does not show the mask (%w); not running", h.Path, ErrReplaced)
		}
	}
	return nil
}

// hiddenInPlace reports whether root shows the mask of h at its path.
func hiddenInPlace(root *os.File, h sandbox.Hidden, file *hostfs.Held) bool {
	f, err := hostfs.OpenInRoot(root, h.Path)
	if err != nil {
		return false
	}
	defer f.Close()
	if !h.Dir {
		id, err := hostfs.IDOf(f)
		return err == nil && file != nil && id == file.ID
	}
	var stx unix.Statx_t
	var sfs unix.Statfs_t
	if unix.Statx(int(f.Fd()), "", unix.AT_EMPTY_PATH, unix.STATX_TYPE|unix.STATX_MODE, &stx) != nil || unix.Fstatfs(int(f.Fd()), &sfs) != nil {
		return false
	}
	return sfs.Type == unix.TMPFS_MAGIC && stx.Mode&0o7777 == 0 &&
		stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0
}
