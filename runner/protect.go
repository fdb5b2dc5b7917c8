package runner

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

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

// ProtectedNames is the one list of protected entries (README and
// SECURITY.md describe it). All of .git is protected, not only its hooks
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
	{".zlogin", false}, {".config/fish", false},
}

// walkLimits bound the walk that looks for protected entries. The walk
// reads every directory of the writable trees once (getdents only; it
// stats the few entries whose names match), skipping the inside of what
// it protects and of node_modules (see prunedDirs). A tree too big for
// these bounds makes the run fail (exit 125) rather than run with entries
// nobody looked for: skipping the rest silently would leave a nested .git
// writable, and making the rest read-only would break the run in a way
// the user cannot see coming.
type walkLimits struct {
	// dirs bounds the directories the walk reads.
	dirs int
	// time bounds the walk's duration (a slow or network filesystem).
	time time.Duration
	// mounts bounds the mounts the protection adds (entries and pinned
	// ancestors): each costs the sandbox's setup time.
	mounts int
}

// defaultWalkLimits are the limits of every run.
var defaultWalkLimits = walkLimits{dirs: 50000, time: 3 * time.Second, mounts: 512}

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
}

// fileID identifies a file: its device and inode.
type fileID struct{ dev, ino uint64 }

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
	return protectPathsWith(ws, write, ro, rw, defaultWalkLimits)
}

// protectPathsWith is protectPaths with the walk's limits.
func protectPathsWith(ws string, write bool, ro, rw []string, lim walkLimits) (Protection, error) {
	w := &walker{mounts: map[string]bool{ws: write}, opened: map[string]bool{}, lim: lim, deadline: time.Now().Add(lim.time), buf: make([]byte, 32<<10)}
	// The order of sandbox.Spec.Config: at the same path an --rw mount
	// lies over an --ro one, and both over the workspace.
	for _, p := range ro {
		w.mounts[p] = false
	}
	for _, p := range rw {
		w.mounts[p] = true
		w.opened[p] = true
	}
	var roots []string
	for p, writable := range w.mounts {
		if fi, err := os.Stat(p); writable && err == nil && fi.IsDir() {
			roots = append(roots, p) // a file: named exactly, so opened
		}
	}
	slices.Sort(roots)
	for _, root := range roots {
		if err := w.walk(root, root == ws); err != nil {
			return Protection{}, err
		}
	}
	pr, err := w.result()
	afterProtectWalk()
	return pr, err
}

// walker holds the state of one protectPaths.
type walker struct {
	// mounts are the sandbox's mounts of host paths at their own path
	// (the workspace, --ro and --rw paths), each with whether it is
	// writable.
	mounts   map[string]bool
	opened   map[string]bool
	found    []string
	dirs     int
	lim      walkLimits
	deadline time.Time
	// buf and ents are readDir's, reused from one directory to the next.
	buf  []byte
	ents []dirent
}

// mountOf returns the mount p lies in (the longest mounted path that is p
// or above it) and whether it is writable; "" outside every mount.
func (w *walker) mountOf(p string) (string, bool) {
	for d := p; ; d = filepath.Dir(d) {
		if writable, ok := w.mounts[d]; ok {
			return d, writable
		}
		if d == "/" || d == "." {
			return "", false
		}
	}
}

// inWritable reports whether p lies in a writable mount and is not itself
// mounted: a path the program could change, and that needs a mount of its
// own to be protected or pinned.
func (w *walker) inWritable(p string) bool {
	m, writable := w.mountOf(p)
	return writable && m != p
}

// walk looks for protected entries in the tree at root; top says root is
// the workspace, where the home's names are looked for too.
func (w *walker) walk(root string, top bool) error {
	if top {
		for _, n := range ProtectedNames {
			if n.anyDepth {
				continue
			}
			matches, err := filepath.Glob(filepath.Join(root, n.name))
			if err != nil {
				return fmt.Errorf("protected paths: %w", err)
			}
			for _, m := range matches {
				if err := w.entry(root, m); err != nil {
					return err
				}
			}
		}
	}
	queue := []string{root}
	for len(queue) > 0 {
		dir := queue[0]
		queue = queue[1:]
		w.dirs++
		if w.dirs > w.lim.dirs || time.Now().After(w.deadline) {
			fix := "run with a narrower --workspace, or without --write"
			if !top {
				fix = "show it with --ro instead of --rw, or a narrower --rw path"
			}
			return fmt.Errorf("protected paths: the writable trees have more than %d directories, or took more than %s, to search for entries to protect (.git at any depth, ...; stopped in %s); %s", w.lim.dirs, w.lim.time, root, fix)
		}
		ents, err := readDir(dir, w.buf, w.ents)
		if errors.Is(err, unix.EACCES) && unix.Access(dir, unix.X_OK) != nil {
			// Only a rootless sbx meets a directory it may not read
			// (root reads all), and then it runs as the program's
			// uid: a directory the program cannot even search holds
			// nothing it could change. One it can search but not
			// read fails the run below (its entries could be reached
			// by name).
			continue
		}
		if err != nil {
			return fmt.Errorf("protected paths: search %s: %w (let the user read it, or narrow --workspace)", dir, err)
		}
		w.ents = ents
		for _, e := range ents {
			rests := anyDepthNames[e.name]
			p := filepath.Join(dir, e.name)
			matched := false
			for _, rest := range rests {
				matched = matched || rest == ""
				full := filepath.Join(p, rest)
				if rest != "" {
					if _, err := os.Lstat(full); err != nil {
						continue
					}
				}
				if err := w.entry(root, full); err != nil {
					return err
				}
			}
			// The inside of a protected directory is read-only as a
			// whole; the first component of a longer name (.github
			// of .github/workflows) is walked like any directory; a
			// symlink is not followed (its target, if in a tree, is
			// walked where it lies); another mount is walked as a
			// tree of its own if writable.
			_, mounted := w.mounts[p]
			if !matched && e.dir && !prunedDirs[e.name] && !mounted {
				queue = append(queue, p)
			}
		}
	}
	return nil
}

// dirent is one entry of a directory: its name, and whether it is a
// directory (not a symlink to one).
type dirent struct {
	name string
	dir  bool
}

// readDir lists dir (which must not be a symlink) without sorting or
// stat'ing its entries, with buf for getdents64: the walk reads every
// directory of the writable trees, so it pays three system calls per
// directory and nothing per entry, but an lstat where the filesystem
// does not give the type.
func readDir(dir string, buf []byte, out []dirent) ([]dirent, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(fd)
	out = out[:0]
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "getdents64", Path: dir, Err: err}
		}
		if n <= 0 {
			return out, nil
		}
		// struct linux_dirent64: u64 ino, s64 off, u16 reclen, u8 type,
		// name (NUL-terminated).
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return nil, &os.PathError{Op: "getdents64", Path: dir, Err: unix.EIO}
			}
			typ, name := b[18], b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			b = b[reclen:]
			if string(name) == "." || string(name) == ".." {
				continue
			}
			e := dirent{name: string(name), dir: typ == unix.DT_DIR}
			if typ == unix.DT_UNKNOWN {
				var st unix.Stat_t
				if err := unix.Lstat(filepath.Join(dir, e.name), &st); err == nil {
					e.dir = st.Mode&unix.S_IFMT == unix.S_IFDIR
				}
			}
			out = append(out, e)
		}
	}
}

// entry records the protected entry p found in the tree at root, or
// refuses it if it (or a directory between root and it) is a symlink.
// A gitfile's git directory is recorded too.
func (w *walker) entry(root, p string) error {
	if w.opened[p] || !w.inWritable(p) {
		return nil // opened, read-only already, or mounted (--ro, --rw)
	}
	for d := p; d != root && within(d, root); d = filepath.Dir(d) {
		fi, err := os.Lstat(d)
		if err != nil {
			return fmt.Errorf("protected paths: %w", err)
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			continue
		}
		target, _ := os.Readlink(d)
		if r, err := filepath.EvalSymlinks(p); err == nil && w.opened[r] {
			return nil // --rw named its target
		}
		return fmt.Errorf("%w: %s (-> %s) could be replaced by the program with one of its own, which the host would then use; run without --write, or open it deliberately with --rw %s", ErrProtectedSymlink, d, target, p)
	}
	w.found = append(w.found, p)
	if filepath.Base(p) == ".git" {
		return w.git(p)
	}
	return nil
}

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
		dir, err := readGitfile(p)
		if err != nil || dir == "" {
			return nil // not a gitfile git would use: nothing more to protect
		}
		gd, err := w.gitPointer(p, dir, "the git directory")
		if gd == "" || err != nil {
			return err
		}
		gitDirs = []string{gd}
	}
	if cd, err := os.ReadFile(filepath.Join(gitDirs[0], "commondir")); err == nil {
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
// user's or the system's config, is not seen (see SECURITY.md).
func (w *walker) hooksPath(dotgit, gd string) error {
	for _, name := range []string{"config", "config.worktree"} {
		data, err := os.ReadFile(filepath.Join(gd, name))
		if err != nil {
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

// readGitfile returns the path a gitfile names ("gitdir: PATH" on its
// first line), or "" when p is not one.
func readGitfile(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	line, err := bufio.NewReader(io.LimitReader(f, 4096)).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", err
	}
	return parseGitfile(line), nil
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

// result turns the entries found into mounts: entries inside another
// entry are covered by it; every directory above an entry that the
// program could rename is pinned.
func (w *walker) result() (Protection, error) {
	var pr Protection
	slices.Sort(w.found)
	w.found = slices.Compact(w.found)
	for _, p := range w.found {
		if n := len(pr.ReadOnly); n > 0 && within(p, pr.ReadOnly[n-1]) {
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
		if !slices.ContainsFunc(pr.ReadOnly, func(e string) bool { return within(d, e) }) {
			pr.Pinned = append(pr.Pinned, d)
		}
	}
	slices.Sort(pr.Pinned)
	if n := len(pr.ReadOnly) + len(pr.Pinned); n > w.lim.mounts {
		return Protection{}, fmt.Errorf("protected paths: %d entries and directories above them to protect, more than %d; run with a narrower --workspace, or without --write", n, w.lim.mounts)
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
// run ends before the program starts.
func (pr Protection) verify(pid int) error {
	root := "/proc/" + strconv.Itoa(pid) + "/root"
	for _, p := range slices.Sorted(maps.Keys(pr.ids)) {
		var st unix.Stat_t
		if err := unix.Lstat(root+p, &st); err != nil {
			return fmt.Errorf("protected paths: check %s in the sandbox: %w", p, err)
		}
		if id := pr.ids[p]; uint64(st.Dev) != id.dev || st.Ino != id.ino {
			return fmt.Errorf("protected paths: %s in the sandbox is not what sbx found there (replaced while the sandbox was set up); not running", p)
		}
	}
	return nil
}
