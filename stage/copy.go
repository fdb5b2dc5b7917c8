package stage

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/sbx-sandbox/sbx/hostfs"
	"golang.org/x/sys/unix"
)

// record is the state of one file when it was staged, used at copy-back to
// tell whether the sandbox changed its copy and whether the host changed the
// original meanwhile.
type record struct {
	Size    int64  `json:"size"`
	MtimeNS int64  `json:"mtime_ns"`
	SHA256  string `json:"sha256"`
	Mode    uint32 `json:"mode"`
	UID     int    `json:"uid"`
	GID     int    `json:"gid"`
}

// skipError is a problem with a source path: the value is left untouched
// and a warning is printed. Every other error is a real failure.
type skipError struct{ reason string }

func (e *skipError) Error() string { return e.reason }

func skipf(format string, a ...any) error { return &skipError{fmt.Sprintf(format, a...)} }

// openSource opens the resolved (symlink-free) host path p for reading
// without following any symlink in any component (hostfs.OpenPath, also
// on kernels without openat2), so a component swapped for a symlink after
// resolution fails instead of redirecting the read. O_NONBLOCK keeps a FIFO
// swapped in from blocking the open.
func openSource(p string) (*os.File, error) {
	return hostfs.OpenPath(p, unix.O_RDONLY|unix.O_NONBLOCK)
}

// statRecord fills the host-side fields of a record from fi.
func statRecord(fi fs.FileInfo) record {
	r := record{Size: fi.Size(), MtimeNS: fi.ModTime().UnixNano(), Mode: uint32(fi.Mode().Perm())}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		r.UID, r.GID = int(st.Uid), int(st.Gid)
	}
	return r
}

// stagedPerm is the mode of a staged copy: private, executable if the
// source was.
func stagedPerm(m fs.FileMode) fs.FileMode {
	if m&0o111 != 0 {
		return 0o700
	}
	return 0o600
}

// copyIn copies the host file src into dst/name (which must not exist). It
// returns the source's record. Source problems are *skipError.
func copyIn(src string, dst *hostfs.Dir, name string, limit int64) (record, error) {
	f, err := openSource(src)
	if err != nil {
		return record{}, skipf("%v", errors.Unwrap(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return record{}, skipf("%v", err)
	}
	if !fi.Mode().IsRegular() {
		return record{}, skipf("not a regular file")
	}
	if fi.Size() > limit {
		return record{}, skipf("larger than %s", sizeString(limit))
	}
	rec := statRecord(fi)
	out, err := dst.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, stagedPerm(fi.Mode()))
	if err != nil {
		return record{}, fmt.Errorf("create staged copy %s: %w", name, err)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(out, h), io.LimitReader(f, limit+1))
	if cerr := out.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("write staged copy %s: %w", name, cerr)
	}
	if err == nil && n > limit {
		err = skipf("larger than %s", sizeString(limit))
	}
	if err != nil {
		_ = dst.Remove(name)
		var pe *os.PathError
		if errors.As(err, &pe) && pe.Path == src {
			return record{}, skipf("read: %v", pe.Err)
		}
		return record{}, err
	}
	rec.SHA256 = hex.EncodeToString(h.Sum(nil))
	return rec, nil
}

func sizeString(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// treeItem is one entry of a directory to stage.
type treeItem struct {
	rel string // slash path below the tree root
	dir bool
	src string // resolved host path of a file (a symlink's target)
}

// maxTreeEntries bounds the walk of a directory value, so that a huge tree
// given by mistake is refused quickly instead of walked in full.
const maxTreeEntries = 256

// planTree lists the directory root (resolved) for staging: at most budget
// files, each at most limit bytes; a symlink is copied as the regular file
// it names when that file is inside the tree, and refuses the whole tree
// otherwise, as does any special file.
func planTree(root string, budget int, limit int64) ([]treeItem, int, error) {
	var items []treeItem
	files := 0
	var walk func(dir, rel string) error
	walk = func(dir, rel string) error {
		ents, err := os.ReadDir(dir)
		if err != nil {
			return skipf("%v", errors.Unwrap(err))
		}
		for _, e := range ents {
			if len(items) >= maxTreeEntries {
				return skipf("more than %d entries", maxTreeEntries)
			}
			p := filepath.Join(dir, e.Name())
			r := path.Join(rel, e.Name())
			fi, err := os.Lstat(p)
			if err != nil {
				return skipf("%v", errors.Unwrap(err))
			}
			src := p
			if fi.Mode()&fs.ModeSymlink != 0 {
				t, err := filepath.EvalSymlinks(p)
				if err != nil || !strings.HasPrefix(t, root+"/") {
					return skipf("symlink %s leads out of the directory", r)
				}
				if fi, err = os.Stat(t); err != nil || !fi.Mode().IsRegular() {
					return skipf("symlink %s does not name a regular file", r)
				}
				src = t
			}
			switch {
			case fi.IsDir():
				items = append(items, treeItem{rel: r, dir: true})
				if err := walk(p, r); err != nil {
					return err
				}
			case fi.Mode().IsRegular():
				if fi.Size() > limit {
					return skipf("%s is larger than %s", r, sizeString(limit))
				}
				if files++; files > budget {
					return skipf("more files than the %d left of the per-run limit", budget)
				}
				items = append(items, treeItem{rel: r, src: src})
			default:
				return skipf("%s is not a regular file or directory", r)
			}
		}
		return nil
	}
	if err := walk(root, ""); err != nil {
		return nil, 0, err
	}
	return items, files, nil
}

// copyTreeIn copies the planned tree into dst/name. recs, if not nil,
// receives the record of every file by its path below the tree.
func copyTreeIn(items []treeItem, dst *hostfs.Dir, name string, limit int64, recs map[string]record) error {
	if err := dst.Mkdir(name, 0o700); err != nil {
		return fmt.Errorf("create staged directory %s: %w", name, err)
	}
	for _, it := range items {
		target := path.Join(name, it.rel)
		if it.dir {
			if err := dst.Mkdir(target, 0o700); err != nil {
				return fmt.Errorf("create staged directory %s: %w", target, err)
			}
			continue
		}
		rec, err := copyIn(it.src, dst, target, limit)
		if err != nil {
			var se *skipError
			if errors.As(err, &se) {
				return skipf("%s: %s", it.rel, se.reason)
			}
			return err
		}
		if recs != nil {
			recs[it.rel] = rec
		}
	}
	return nil
}

// uniqueName returns name, or name with "-N" inserted before its extension
// (a.mjs, a-1.mjs, a-2.mjs), whichever is not in taken; agents dispatch on
// the extension, so it is kept. The result is added to taken.
func uniqueName(name string, taken map[string]bool) string {
	if name == "" || name == "." || name == ".." || name == "/" {
		name = "staged"
	}
	stem, ext := splitExt(name)
	cand := name
	for n := 1; taken[cand]; n++ {
		cand = fmt.Sprintf("%s-%d%s", stem, n, ext)
	}
	taken[cand] = true
	return cand
}

// splitExt splits "a.test.mjs" into "a.test" and ".mjs"; a dotfile such as
// ".env" has no extension.
func splitExt(name string) (string, string) {
	ext := filepath.Ext(name)
	if ext == name {
		ext = ""
	}
	return strings.TrimSuffix(name, ext), ext
}

// conflictName is where the sandbox's version goes when the host file
// changed during the run: s.jsonl -> s.sbx-conflict-<run-id>.jsonl, with
// "-N" after the run id if that exists too.
func conflictName(name, runID string, n int) string {
	stem, ext := splitExt(name)
	if n == 0 {
		return fmt.Sprintf("%s.sbx-conflict-%s%s", stem, runID, ext)
	}
	return fmt.Sprintf("%s.sbx-conflict-%s-%d%s", stem, runID, n, ext)
}

// sortedKeys returns the keys of m in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
