package protect

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/sbx-sandbox/sbx/hostfs"
	"github.com/sbx-sandbox/sbx/sandbox"
	"golang.org/x/sys/unix"
)

// A mask (sbx run --mask PATH) hides a file's or a directory's content
// from the program while its name stays: the path shows as an empty file
// or directory that the program can neither read nor list (EACCES, which
// the tracer reports as a denial). Each tier that can express it takes
// part:
//
//   - the mount level (every run, rootless too): a mode-0000 empty file
//     bound read-only, or a mode-0000 read-only tmpfs, over the path (see
//     [sandbox.Hidden]); the program has no capabilities, so no owner bits
//     or CAP_DAC_OVERRIDE get it past the mode;
//   - the BPF LSM tier: a deny rule on the original file's identity, so
//     that no other name of it (a hard link elsewhere in the workspace)
//     opens it either (bpf.FilePolicy.Deny);
//   - Landlock cannot: its rules only add access below an allowed
//     directory, so a path inside the workspace is covered by the mount
//     level alone there; that is why the mount level also masks every
//     other name (hard link) of a masked file, or of a file inside a
//     masked directory, in the trees the sandbox shows (maskLinks).
//
// A mask of a path the sandbox does not show (outside the workspace, the
// --ro/--rw paths and the system directories; the real home is never
// shown) has nothing to hide and mounts nothing.

// MaskFileName is the empty file, mode 0000, in the state dir that masked
// files show.
const MaskFileName = "mask-empty"

// MaxMasks bounds the masks and extra protected paths of a run: each is a
// mount, and a settings file's glob could name thousands.
const MaxMasks = 512

// Mounts are a run's host paths as the sandbox mounts them: the
// workspace (writable under --write), the --ro and the --rw paths, all
// resolved.
type Mounts struct {
	WS     string
	Write  bool
	RO, RW []string
}

// visible reports whether host path p is shown in the sandbox at its own
// path: inside the workspace, an --ro or --rw path, or a system directory.
func (m Mounts) visible(p string) bool {
	if hostfs.Under(p, m.WS) {
		return true
	}
	for _, r := range append(slices.Clone(m.RO), m.RW...) {
		if hostfs.Under(p, r) {
			return true
		}
	}
	for _, e := range sandbox.HostLayout() {
		if e.Dir && hostfs.Under(p, e.Path) {
			return true
		}
	}
	return false
}

// Hidden returns the masks (resolved --mask paths) the sandbox shows (see
// visible), with whether each is a directory; protects (resolved
// --settings denyWrite paths) count towards MaxMasks.
func (m Mounts) Hidden(masks, protects []string) ([]sandbox.Hidden, error) {
	return m.HiddenWith(masks, protects, DefaultLimits)
}

// HiddenWith is Hidden with the link search's limits: each visible mask,
// then every other name of a masked file in the trees the sandbox shows
// (maskLinks).
func (m Mounts) HiddenWith(masks, protects []string, lim Limits) ([]sandbox.Hidden, error) {
	var out []sandbox.Hidden
	var shown []string
	for _, p := range masks {
		if !m.visible(p) {
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("--mask %s: %w", p, err)
		}
		out = append(out, sandbox.Hidden{Path: p, Dir: fi.IsDir()})
		shown = append(shown, p)
	}
	links, err := m.maskLinks(shown, lim)
	if err != nil {
		return nil, err
	}
	if n := len(masks) + len(protects) + len(links); n > MaxMasks {
		return nil, fmt.Errorf("--mask: %d paths to mask or protect with the other names of masked files: more than %d (each is a mount)", n, MaxMasks)
	}
	for _, p := range links {
		out = append(out, sandbox.Hidden{Path: p})
	}
	return out, nil
}

// writableRoot returns the writable tree (the workspace under --write, or
// an --rw directory) that p lies strictly inside, if any.
func (m Mounts) writableRoot(p string) (string, bool) {
	roots := slices.Clone(m.RW)
	if m.Write {
		roots = append(roots, m.WS)
	}
	best := ""
	for _, r := range roots {
		if p != r && hostfs.Under(p, r) && len(r) > len(best) {
			best = r
		}
	}
	// A read-only mount nearer to p than the writable root keeps it
	// read-only already.
	for _, r := range m.RO {
		if hostfs.Under(p, r) && len(r) > len(best) {
			return "", false
		}
	}
	return best, best != ""
}

// Extra adds the protects (resolved --settings denyWrite paths) that lie
// in writable trees to prot: each read-only, the directories between it and its tree pinned
// (so that they cannot be renamed away and rebuilt without it). A path
// that is a writable root itself is refused: open it read-only instead.
func (m Mounts) Extra(prot *Protection, protects []string) error {
	for _, p := range protects {
		for _, r := range m.RW {
			if p == r {
				return fmt.Errorf("--settings denyWrite %s: it is also a writable path (allowWrite, --rw); drop one of them", p)
			}
		}
		root, ok := m.writableRoot(p)
		if !ok {
			continue // read-only or not shown already
		}
		add := func(list *[]string, path string) error {
			if slices.Contains(*list, path) {
				return nil
			}
			var st unix.Stat_t
			if err := unix.Lstat(path, &st); err != nil {
				return fmt.Errorf("--settings denyWrite %s: %w", path, err)
			}
			if prot.ids == nil {
				prot.ids = map[string]fileID{}
			}
			prot.ids[path] = fileID{dev: uint64(st.Dev), ino: st.Ino}
			*list = append(*list, path)
			return nil
		}
		if err := add(&prot.ReadOnly, p); err != nil {
			return err
		}
		for d := filepath.Dir(p); d != root && hostfs.Under(d, root); d = filepath.Dir(d) {
			if err := add(&prot.Pinned, d); err != nil {
				return err
			}
		}
	}
	return nil
}

// maskFile returns the state dir's empty file of mode 0000, creating it
// when missing (never following a symlink). A file there of another kind,
// size or mode is replaced.
func MaskFile(stateDir string) (string, error) {
	path := filepath.Join(stateDir, MaskFileName)
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && fi.Size() == 0 && fi.Mode().Perm() == 0 {
		return path, nil
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return "", fmt.Errorf("mask file: %w", err)
	}
	dir, err := hostfs.OpenDir(stateDir, nil)
	if err != nil {
		return "", fmt.Errorf("mask file: %w", err)
	}
	defer dir.Close()
	tmp := MaskFileName + ".tmp-" + fmt.Sprint(os.Getpid())
	f, err := dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0)
	if err == nil {
		err = f.Chmod(0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = dir.Rename(tmp, MaskFileName)
	}
	if err != nil {
		_ = dir.Remove(tmp)
		return "", fmt.Errorf("mask file: %w", err)
	}
	return path, nil
}

// dropMasked removes from prot what a mask covers: a masked directory is a
// read-only tmpfs of mode 0000 over everything below it, stricter than a
// protected entry, and what it covers cannot be checked in the sandbox
// (see Protection.verify) nor needs to be.
func DropMasked(prot *Protection, hidden []sandbox.Hidden) {
	covered := func(p string) bool {
		return slices.ContainsFunc(hidden, func(h sandbox.Hidden) bool { return p == h.Path || h.Dir && hostfs.Under(p, h.Path) })
	}
	for _, list := range []*[]string{&prot.ReadOnly, &prot.Pinned} {
		*list = slices.DeleteFunc(*list, func(p string) bool {
			if covered(p) {
				delete(prot.ids, p)
				return true
			}
			return false
		})
	}
}
