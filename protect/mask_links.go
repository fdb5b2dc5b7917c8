package protect

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/sbx-sandbox/sbx/hostfs"
	"golang.org/x/sys/unix"
)

// maskLinks returns the other names, in the trees the sandbox shows from
// the host at their own paths and that a user may fill (the workspace, the
// --ro and --rw directories), of the masked regular files that have more
// than one name: each masked file, and each file inside a masked
// directory. A mask is a mount over a path, not over a file: a hard link
// made before the run elsewhere in the workspace would show the file. The
// BPF LSM tier denies a masked file itself, but Landlock cannot, and a
// rootless run has neither, so every name found gets a mask of its own.
//
// The search reads directories (getdents gives each entry's inode number;
// a match is confirmed with lstat; inside masked directories each regular
// file is lstat'ed for its link count), stops as soon as every name of
// every such file is known, and is bounded as the protected-entry walk is
// (lim): a search that does not end refuses the run, since a name left
// unmasked would show the file. Names outside these trees (the host's other
// directories) are not shown in the sandbox and need none. Call it with the
// invoking user's rights (the workspace is the program's to change).
func (m Mounts) maskLinks(masks []string, lim Limits) ([]string, error) {
	masked := map[string]bool{} // every mask, files and directories
	for _, p := range masks {
		masked[p] = true
	}
	s := &linkSearch{lim: lim, deadline: time.Now().Add(lim.Time), buf: make([]byte, 32<<10), masked: masked, wanted: map[fileID]*linkedFile{}, byIno: map[uint64]bool{}, counted: map[string]bool{}}
	for _, p := range masks {
		if err := s.collect(p); err != nil {
			return nil, err
		}
	}
	pending := 0
	for _, w := range s.wanted {
		if w.left > 0 {
			pending++
		}
	}
	if pending == 0 {
		return nil, nil
	}
	var found []string
	over := func() error {
		var left []string
		for _, w := range s.wanted {
			if w.left > 0 {
				left = append(left, w.path)
			}
		}
		slices.Sort(left)
		return fmt.Errorf("--mask %s: the file has other names (hard links), which its mask does not hide; searching the workspace and the --ro/--rw trees for them read more than %d directories, or took more than %s; mask each name, or narrow --workspace", left[0], lim.Dirs, lim.Time)
	}
	for _, root := range m.linkRoots() {
		err := s.walk(root, func() bool { return pending == 0 }, func(p string, e dirent) {
			if !s.byIno[e.ino] {
				return
			}
			var st unix.Stat_t
			if err := unix.Lstat(p, &st); err != nil {
				return
			}
			w, ok := s.wanted[fileID{uint64(st.Dev), st.Ino}]
			if !ok || w.left == 0 {
				return
			}
			found = append(found, p)
			masked[p] = true
			if w.left--; w.left == 0 {
				pending--
			}
		}, over)
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(found)
	return found, nil
}

// linkedFile is a masked file with more than one name: the first name
// seen, and how many names are not known yet.
type linkedFile struct {
	path string
	left int
}

// linkSearch is the state of one maskLinks search.
type linkSearch struct {
	lim      Limits
	deadline time.Time
	dirs     int // directories read so far
	buf      []byte
	ents     []dirent
	masked   map[string]bool
	wanted   map[fileID]*linkedFile
	byIno    map[uint64]bool // the inode numbers of wanted, for getdents
	counted  map[string]bool // the names inside masks already counted
}

// budget counts one more directory read and reports whether the search
// is still within its limits.
func (s *linkSearch) budget() bool {
	s.dirs++
	return s.dirs <= s.lim.Dirs && time.Now().Before(s.deadline)
}

// collect records the regular files with more than one name that the mask
// p hides: p itself, or every such file below the directory p (which is
// read whole: its files' names need no mask of their own, but their other
// names elsewhere do).
func (s *linkSearch) collect(p string) error {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return fmt.Errorf("--mask %s: %w", p, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		s.add(p, &st)
		return nil
	}
	return s.walk(p, func() bool { return false }, func(c string, _ dirent) {
		var fst unix.Stat_t
		if err := unix.Lstat(c, &fst); err == nil {
			s.add(c, &fst)
		}
	}, func() error {
		return fmt.Errorf("--mask %s: searching the masked directory for files with other names (hard links), which its mask would not hide, read more than %d directories, or took more than %s; mask a smaller directory", p, s.lim.Dirs, s.lim.Time)
	})
}

// walk reads the tree at root breadth first and calls file for each entry
// that is not a directory, until done reports true. It never enters a
// masked directory nor passes a masked name (each mask is walked or
// collected on its own; the names below it are hidden). A directory the
// user cannot read is skipped: the program could neither open nor link a
// file by a name found there. Once the search's bounds are spent it
// returns over's error.
func (s *linkSearch) walk(root string, done func() bool, file func(p string, e dirent), over func() error) error {
	queue := []string{root}
	for len(queue) > 0 && !done() {
		dir := queue[0]
		queue = queue[1:]
		if !s.budget() {
			return over()
		}
		var err error
		if s.ents, err = readDir(dir, s.buf, s.ents); err != nil {
			continue
		}
		for _, e := range s.ents {
			p := filepath.Join(dir, e.name)
			switch {
			case s.masked[p]:
			case e.dir:
				queue = append(queue, p)
			default:
				file(p, e)
			}
		}
	}
	return nil
}

// add records the hidden name p of the file st, if it is a regular file
// with more than one name: one name fewer to find.
func (s *linkSearch) add(p string, st *unix.Stat_t) {
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink < 2 {
		return
	}
	if s.counted[p] {
		return
	}
	s.counted[p] = true
	id := fileID{uint64(st.Dev), st.Ino}
	if w, ok := s.wanted[id]; ok {
		w.left-- // two hidden names of the same file
		return
	}
	s.wanted[id] = &linkedFile{path: p, left: int(st.Nlink) - 1}
	s.byIno[st.Ino] = true
}

// linkRoots are the trees maskLinks searches: the workspace and the --ro
// and --rw directories, none inside another.
func (m Mounts) linkRoots() []string {
	var roots []string
	for _, p := range append(append([]string{m.WS}, m.RO...), m.RW...) {
		var st unix.Stat_t
		if unix.Stat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			roots = append(roots, p)
		}
	}
	slices.Sort(roots)
	roots = slices.Compact(roots)
	var out []string
	for _, r := range roots {
		if len(out) > 0 && hostfs.Under(r, out[len(out)-1]) {
			continue
		}
		out = append(out, r)
	}
	return out
}
