package protect

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sbx-sandbox/sbx/hostfs"
	"github.com/sbx-sandbox/sbx/mountsrc"
	"golang.org/x/sys/unix"
)

// A protectedName is a workspace entry that runs later outside the sandbox
// (git hooks and config, direnv, CI, editor and agent settings, shell rc
// files): through it a hostile program could persist, so it stays read-only
// even where the program may write around it.
type protectedName struct {
	// name is a path relative to the directory it is looked up in; a
	// name with a "*" is a glob (at the top only).
	name string
	// anyDepth looks the name up in every directory of the tree, not
	// only at the top: the names of a repository or project, since
	// nested repositories, submodules, worktrees and sub-projects each
	// have their own. The others are a home's (rc files, .ssh,
	// .gitconfig): a shell or git reads them only from $HOME, which a
	// workspace may be but none of its subdirectories is.
	anyDepth bool
}

// ProtectedNames is the one list of protected entries (docs/tiers.md
// and docs/security-model.md describe it). All of .git is protected, not only its hooks
// and config: a program that may write there can rename .git away and
// build one with its own hooks, or point git elsewhere with commondir
// (--rw .git allows commits from inside). A .git that is a file (a
// submodule's or a worktree's gitfile) is protected, and so is the git
// directory it names when that lies in a writable tree.
var ProtectedNames = []protectedName{
	// Version control and what it runs.
	{".git", true}, {".hg", true}, {".gitmodules", true},
	{".husky", true}, {".pre-commit-config.yaml", true}, {".github/workflows", true},
	// Environment, editors, agents, dev containers.
	{".envrc", true}, {".vscode", true}, {".idea", true}, {".mcp.json", true},
	{".claude", true}, {".cursor", true}, {".pi", true}, {".devcontainer", true},
	// A home's: shell rc files, git and ssh settings, sbx's own files.
	{".sbx*", false}, {".gitconfig", false}, {".ssh", false},
	{".bashrc", false}, {".bash_profile", false}, {".bash_login", false}, {".bash_logout", false},
	{".profile", false}, {".zshrc", false}, {".zshenv", false}, {".zprofile", false},
	{".zlogin", false}, {".config/fish", false}, {".config/sbx", false},
}

// Limits bound the walk that looks for protected entries. The walk
// reads every directory of the writable trees once (getdents only; it
// stats the few entries whose names match), skipping the inside of what
// it protects and of node_modules (see prunedDirs). A tree too big for
// these bounds makes the run fail (exit 125) rather than run with entries
// nobody looked for: skipping the rest silently would leave a nested .git
// writable, and making the rest read-only would break the run in a way
// the user cannot see coming.
type Limits struct {
	// Dirs bounds the directories the walk reads.
	Dirs int
	// Time bounds the walk's duration (a slow or network filesystem).
	Time time.Duration
	// Mounts bounds the mounts the protection adds (entries and pinned
	// ancestors): each costs the sandbox's setup time.
	Mounts int
}

// DefaultLimits are the limits of every run.
var DefaultLimits = Limits{Dirs: 50000, Time: 3 * time.Second, Mounts: 512}

// anyDepthNames maps the first component of each name of ProtectedNames
// that is looked up at any depth to the rest of each such name ("" for a
// one-component name): the walk's lookup for every entry it reads.
var anyDepthNames = func() map[string][]string {
	m := map[string][]string{}
	for _, n := range ProtectedNames {
		if n.anyDepth {
			first, rest, _ := strings.Cut(n.name, "/")
			m[first] = append(m[first], rest)
		}
	}
	return m
}()

// prunedDirs are directory names the walk does not enter. node_modules
// holds trees of tens of thousands of directories that package managers
// rewrite all the time, and its content is code the host runs anyway
// (npm scripts, .bin): a protected .git in there would not stop anything
// that the rest of node_modules does not already allow. It is documented
// as not searched, not silently skipped.
var prunedDirs = map[string]bool{"node_modules": true}

// Protection is what the program must not be able to replace in the
// writable trees of a run.
type Protection struct {
	// ReadOnly are the protected entries, bind-mounted read-only onto
	// themselves: files in them cannot be written, created, linked or
	// removed (EROFS), the entries themselves not renamed or removed
	// (EBUSY).
	ReadOnly []string
	// Pinned are the directories between a writable tree's root and a
	// protected entry, bind-mounted writable onto themselves: a mount
	// point cannot be renamed or removed (EBUSY), so the program cannot
	// move an ancestor away and build a lookalike of the entry in its
	// place (mv .config .config.moved && mkdir -p .config/fish). Their
	// other contents stay writable.
	Pinned []string
	// ids are the identities of ReadOnly and Pinned as the walk found
	// them (see verify).
	ids map[string]fileID
	// seen are all the protected entries the walk found (those inside
	// another one too), with their identities: what Mounts.Created
	// compares the end of the run with.
	seen map[string]fileID
}

// fileID identifies a file: its device and inode.
type fileID struct{ dev, ino uint64 }

// ID returns the identity the walk found for path, one of ReadOnly or
// Pinned.
func (pr Protection) ID(path string) (hostfs.FileID, bool) {
	id, ok := pr.ids[path]
	return hostfs.FileID{Dev: id.dev, Ino: id.ino}, ok
}

// ErrProtectedSymlink is wrapped by the error for a protected entry that is
// a symlink (see protectPaths).
var ErrProtectedSymlink = errors.New("protected entry is a symlink")

// protectPaths finds what to protect in the writable trees of a run: the
// workspace ws with write, and the directories of rw (the resolved --rw
// paths); ro are the resolved --ro paths. Each of them is a mount of the
// sandbox, and the walk of a writable one stops at the others: a
// read-only one (an --ro path, the workspace without --write) holds
// nothing to protect and no directory to pin (a pin is a writable mount,
// which would open it), and a writable one is walked as a tree of its own.
// A protected entry is opened (left writable) only by an --rw path that
// names it exactly, so --rw .git opens the workspace's .git but --rw sub
// keeps sub/.git protected.
//
// A protected entry that is a symlink (or that lies under a symlink, such
// as .config/fish with .config a symlink) is refused unless opened: a
// mount can make the link's target read-only but not the link, which the
// program could unlink and replace with a directory of its own (a .git
// with a hook that the host's git runs). mount(2) follows a symlink at
// the mount point, and libcontainer opens every destination with
// pathrs.OpenInRoot, which follows it too, so the config cannot name the
// link itself. The kernel could: a clone of the link made with
// open_tree(OPEN_TREE_CLONE|AT_SYMLINK_NOFOLLOW) and move_mount'ed onto
// the link without MOVE_MOUNT_T_SYMLINKS makes its unlink and rename fail
// with EBUSY (tried on 6.18); doing that in the sandbox's mount namespace
// would take a helper outside libcontainer's setup, which sbx does not
// have. Refusing, with the fix named, fails closed.
func protectPaths(ws string, write bool, ro, rw []string) (Protection, error) {
	return protectPathsWith(ws, write, ro, rw, DefaultLimits)
}

// protectPathsWith is protectPaths with the walk's limits.
func protectPathsWith(ws string, write bool, ro, rw []string, lim Limits) (Protection, error) {
	return protectTrees(trees{ws: ws, write: write, ro: ro, rw: rw, open: rw}, lim)
}

// trees are the mounts of host paths of a run, as protectTrees sees them.
type trees struct {
	ws     string
	write  bool
	ro, rw []string
	// open are the rw paths that open a protected entry they name
	// (those of the command line).
	open []string
	// home is the invoking user's home: its names (rc files, .ssh,
	// .config/sbx) are protected wherever it lies in a writable tree,
	// as they are in a workspace.
	home string
}

// Run is protectPaths for a run's mounts m: only the command line's --rw
// paths open a protected entry (not policyRW, those of a settings file, a
// profile or the config), and the home's names are looked for in the
// invoking user's home too.
func (m Mounts) Run(policyRW []string, userHome string) (Protection, error) {
	return protectTrees(m.trees(policyRW, userHome), DefaultLimits)
}

// trees are the trees of m for Run and Created.
func (m Mounts) trees(policyRW []string, userHome string) trees {
	open := slices.DeleteFunc(slices.Clone(m.RW), func(p string) bool { return slices.Contains(policyRW, p) })
	home := ""
	if h := userHome; filepath.IsAbs(h) && h != "/" {
		if r, err := filepath.EvalSymlinks(h); err == nil {
			home = r
		}
	}
	return trees{ws: m.WS, write: m.Write, ro: m.RO, rw: m.RW, open: open, home: home}
}

// Created returns the protected entries in the writable trees of m that
// the run created: the entries that the same walk as Run's finds now (its
// limits included) and that start, Run's result at the start of the run,
// did not find (by identity, at any path). An entry opened by a
// command-line --rw path is not one. A created entry that is a symlink is
// returned, not followed. Call it once the sandbox is gone, with the
// invoking user's rights.
func (m Mounts) Created(start Protection, policyRW []string, userHome string) ([]string, error) {
	return created(start, m.trees(policyRW, userHome), DefaultLimits)
}

// created is Created for the trees t, with limits lim.
func created(start Protection, t trees, lim Limits) ([]string, error) {
	w := newWalker(t, lim)
	w.end = true
	if err := w.walkAll(); err != nil {
		return nil, err
	}
	slices.Sort(w.found)
	// An entry is the start's if it is one of the start's files, at
	// whatever path: a directory above it renamed on the host (mv lib
	// lib2) moves a repository's .git along, which is not a new one. A
	// new entry is a new inode (the program cannot rename or link the
	// start's entries: they are mount points, read-only).
	known := map[fileID]bool{}
	for _, id := range start.seen {
		known[id] = true
	}
	var made []string
	for _, p := range slices.Compact(w.found) {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			continue // gone since it was found
		}
		if known[fileID{uint64(st.Dev), st.Ino}] {
			continue
		}
		made = append(made, p)
	}
	return made, nil
}

// newWalker is a walker of the trees t, with limits lim.
func newWalker(t trees, lim Limits) *walker {
	w := &walker{t: t, mounts: map[string]bool{t.ws: t.write}, opened: map[string]bool{}, lim: lim, deadline: time.Now().Add(lim.Time), buf: make([]byte, 32<<10)}
	// The order of sandbox.Spec.Config: at the same path an --rw mount
	// lies over an --ro one, and both over the workspace.
	for _, p := range t.ro {
		w.mounts[p] = false
	}
	for _, p := range t.rw {
		w.mounts[p] = true
	}
	for _, p := range t.open {
		w.opened[p] = true
	}
	return w
}

// walkAll walks every writable tree of w.t for protected entries.
func (w *walker) walkAll() error {
	t, ws := w.t, w.t.ws
	var roots []string
	for p, writable := range w.mounts {
		if fi, err := os.Stat(p); writable && err == nil && fi.IsDir() {
			roots = append(roots, p) // a file: named exactly, so opened
		}
	}
	slices.Sort(roots)
	for _, root := range roots {
		if err := w.walk(root, root == ws); err != nil {
			return err
		}
		if t.home != "" && t.home != ws && (hostfs.Under(t.home, root) || hostfs.Under(root, t.home)) {
			if err := w.homeNames(root, t.home); err != nil {
				return err
			}
		}
	}
	return nil
}

// protectTrees is protectPaths with what opens an entry and the limits.
func protectTrees(t trees, lim Limits) (Protection, error) {
	w := newWalker(t, lim)
	if err := w.walkAll(); err != nil {
		return Protection{}, err
	}
	pr, err := w.result()
	afterProtectWalk()
	return pr, err
}

// result turns the entries found into mounts: entries inside another
// entry are covered by it; every directory above an entry that the
// program could rename is pinned.
func (w *walker) result() (Protection, error) {
	var pr Protection
	slices.Sort(w.found)
	w.found = slices.Compact(w.found)
	for _, p := range w.found {
		if n := len(pr.ReadOnly); n > 0 && hostfs.Under(p, pr.ReadOnly[n-1]) {
			continue
		}
		pr.ReadOnly = append(pr.ReadOnly, p)
	}
	pinned := map[string]bool{}
	for _, p := range pr.ReadOnly {
		// Up to the top of the sandbox's views of the host: renaming
		// a directory moves the mounts below it along, so a pin is
		// needed above an --rw mount too, wherever the program may
		// rename (not in a read-only mount, not a mount point itself).
		for d := filepath.Dir(p); ; d = filepath.Dir(d) {
			if m, _ := w.mountOf(d); m == "" {
				break
			}
			if w.inWritable(d) {
				pinned[d] = true
			}
		}
	}
	for d := range pinned {
		if !slices.ContainsFunc(pr.ReadOnly, func(e string) bool { return hostfs.Under(d, e) }) {
			pr.Pinned = append(pr.Pinned, d)
		}
	}
	slices.Sort(pr.Pinned)
	if n := len(pr.ReadOnly) + len(pr.Pinned); n > w.lim.Mounts {
		return Protection{}, fmt.Errorf("protected paths: %d entries and directories above them to protect, more than %d; run with a narrower --workspace, or without --write", n, w.lim.Mounts)
	}
	pr.seen = map[string]fileID{}
	for _, p := range w.found {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err == nil {
			pr.seen[p] = fileID{uint64(st.Dev), st.Ino}
		}
	}
	pr.ids = map[string]fileID{}
	for _, p := range slices.Concat(pr.ReadOnly, pr.Pinned) {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return Protection{}, fmt.Errorf("protected paths: %w", &os.PathError{Op: "lstat", Path: p, Err: err})
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return Protection{}, fmt.Errorf("%w: %s became one while sbx looked for protected entries; not running", ErrProtectedSymlink, p)
		}
		pr.ids[p] = fileID{uint64(st.Dev), st.Ino}
	}
	return pr, nil
}

// verify checks, once the sandbox's mounts are in place and before its
// program starts, that each protected entry and pinned directory, seen
// through the root of the sandbox's PID 1 (pid), is the file the walk
// found. libcontainer opens bind sources by their host path, following
// symlinks, and the program of another run on the same tree could swap a
// path for a symlink between the walk and the mount: a pin would then be
// a writable bind of whatever the link names (a host directory outside
// the workspace). Any such swap changes the identity found here, and the
// run ends before the program starts. The lookup follows no symlink at
// any component (a lookup by name through /proc/PID/root would follow
// one relative to the host's root).
func (pr Protection) Verify(pid int) error {
	var want []mountsrc.Expected
	for _, p := range slices.Sorted(maps.Keys(pr.ids)) {
		id := pr.ids[p]
		want = append(want, mountsrc.Expected{Path: p, ID: hostfs.FileID{Dev: id.dev, Ino: id.ino}})
	}
	if err := mountsrc.CheckInRoot(pid, want); err != nil {
		return fmt.Errorf("protected paths: %w", err)
	}
	return nil
}

// protectedEntryOf returns the protected entry that the resolved path p
// is or lies inside, by name: a component named as an entry protected at
// any depth, or, below the workspace ws or the home, a name of a home.
func EntryOf(p, ws, home string) (string, bool) {
	for d := p; d != "/" && d != "."; d = filepath.Dir(d) {
		for _, n := range ProtectedNames {
			if n.anyDepth && strings.HasSuffix(d, "/"+n.name) {
				return d, true
			}
		}
	}
	for _, base := range []string{ws, home} {
		if base == "" || !hostfs.Under(p, base) {
			continue
		}
		for _, n := range ProtectedNames {
			if n.anyDepth {
				continue
			}
			e := filepath.Join(base, n.name)
			if ok, _ := filepath.Match(e, p); ok || hostfs.Under(p, e) {
				return e, true
			}
			// A glob name (.sbx*): the first component below base.
			rel, _ := filepath.Rel(base, p)
			first, _, _ := strings.Cut(rel, "/")
			if ok, _ := filepath.Match(n.name, first); ok && strings.Contains(n.name, "*") {
				return filepath.Join(base, first), true
			}
		}
	}
	return "", false
}
