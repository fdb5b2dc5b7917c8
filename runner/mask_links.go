package runner

import (
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// maskLinks returns the other names, in the trees the sandbox shows from
// the host at their own paths and that a user may fill (the workspace, the
// --ro and --rw directories), of the masked regular files that have more
// than one name. A mask is a mount over a path, not over a file: a hard
// link made before the run elsewhere in the workspace would show the file.
// The BPF LSM tier denies the file itself, but Landlock cannot, and a
// rootless run has neither, so every name found gets a mask of its own.
//
// The search reads directories only (getdents gives each entry's inode
// number; a match is confirmed with lstat), stops as soon as every name of
// every such file is known, and is bounded as the protected-entry walk is
// (lim): a search that does not end refuses the run, since a name left
// unmasked would show the file. Names outside these trees (the host's other
// directories) are not shown in the sandbox and need none. Call it with the
// invoking user's rights (the workspace is the program's to change).
func (o *Options) maskLinks(files []string, lim walkLimits) ([]string, error) {
	type want struct {
		path string
		left int // names not found yet
	}
	wanted := map[fileID]*want{}
	byIno := map[uint64]bool{}
	for _, p := range files {
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return nil, fmt.Errorf("--mask %s: %w", p, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink < 2 {
			continue
		}
		id := fileID{uint64(st.Dev), st.Ino}
		if w, ok := wanted[id]; ok {
			w.left-- // two masks name the same file
			continue
		}
		wanted[id] = &want{path: p, left: int(st.Nlink) - 1}
		byIno[st.Ino] = true
	}
	if len(wanted) == 0 {
		return nil, nil
	}
	masked := map[string]bool{} // every mask, files and directories
	for _, p := range append(slices.Clone(o.masks), files...) {
		masked[p] = true
	}
	pending := 0
	for _, w := range wanted {
		if w.left > 0 {
			pending++
		}
	}
	roots := o.linkRoots()
	var found []string
	deadline := time.Now().Add(lim.time)
	dirs := 0
	buf := make([]byte, 32<<10)
	var ents []dirent
	for _, root := range roots {
		queue := []string{root}
		for len(queue) > 0 && pending > 0 {
			dir := queue[0]
			queue = queue[1:]
			dirs++
			if dirs > lim.dirs || time.Now().After(deadline) {
				var left []string
				for _, w := range wanted {
					if w.left > 0 {
						left = append(left, w.path)
					}
				}
				slices.Sort(left)
				return nil, fmt.Errorf("--mask %s: the file has other names (hard links), which its mask does not hide; searching the workspace and the --ro/--rw trees for them read more than %d directories, or took more than %s; mask each name, or narrow --workspace", left[0], lim.dirs, lim.time)
			}
			var err error
			ents, err = readDir(dir, buf, ents)
			if err != nil {
				// A directory the user cannot read holds nothing the
				// program could open by a name found there.
				continue
			}
			for _, e := range ents {
				p := filepath.Join(dir, e.name)
				if e.dir {
					if !masked[p] { // a masked directory hides its names
						queue = append(queue, p)
					}
					continue
				}
				if !byIno[e.ino] || masked[p] {
					continue
				}
				var st unix.Stat_t
				if err := unix.Lstat(p, &st); err != nil {
					continue
				}
				w, ok := wanted[fileID{uint64(st.Dev), st.Ino}]
				if !ok || w.left == 0 {
					continue
				}
				found = append(found, p)
				masked[p] = true
				if w.left--; w.left == 0 {
					pending--
				}
			}
		}
	}
	slices.Sort(found)
	return found, nil
}

// linkRoots are the trees maskLinks searches: the workspace and the --ro
// and --rw directories, none inside another.
func (o *Options) linkRoots() []string {
	var roots []string
	for _, p := range append(append([]string{o.ws}, o.ro...), o.rw...) {
		var st unix.Stat_t
		if unix.Stat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			roots = append(roots, p)
		}
	}
	slices.Sort(roots)
	roots = slices.Compact(roots)
	var out []string
	for _, r := range roots {
		if len(out) > 0 && within(r, out[len(out)-1]) {
			continue
		}
		out = append(out, r)
	}
	return out
}
