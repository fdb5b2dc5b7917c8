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
	"time"
)

// maxCopyBackFiles bounds the files one entry brings back, so that a
// sandbox cannot flood a host directory.
const maxCopyBackFiles = 1000

// finishRun copies back every entry of m and, if all succeeded, removes the
// run dir, the manifest and the lock file. The caller holds the lock.
func finishRun(stateDir string, m *manifest, warn io.Writer) error {
	home, err := os.OpenRoot(m.SandboxHome)
	if err != nil {
		return fmt.Errorf("open sandbox home %s: %w", m.SandboxHome, err)
	}
	defer home.Close()
	runRel := StagingDir + "/" + m.RunID
	state, err := stagingState(home, runRel)
	if err != nil {
		return fmt.Errorf("staging dir of run %s: %w", m.RunID, err)
	}
	switch state {
	case stagingGone:
		if len(m.Entries) > 0 {
			fmt.Fprintf(warn, "sbx: the staging dir of run %s is gone; nothing to copy back\n", m.RunID)
		}
	case stagingReplaced:
		// Planted by the sandbox: never read or delete through it.
		fmt.Fprintf(warn, "sbx: the staging dir of run %s was replaced inside the sandbox (not a directory); nothing copied back\n", m.RunID)
		_ = home.Remove(runRel)
	default:
		run, err := home.OpenRoot(runRel)
		if err != nil {
			return fmt.Errorf("open staging dir of run %s: %w", m.RunID, err)
		}
		var errs []error
		for i := range m.Entries {
			if err := copyBack(run, &m.Entries[i], m.RunID, warn); err != nil {
				errs = append(errs, fmt.Errorf("copy back %s: %w", m.Entries[i].Arg, err))
			}
		}
		run.Close()
		if len(errs) > 0 {
			fmt.Fprintf(warn, "sbx: keeping %s for a later retry (sbx recover)\n", filepath.Join(m.SandboxHome, runRel))
			return errors.Join(errs...)
		}
		if err := home.RemoveAll(runRel); err != nil {
			return fmt.Errorf("remove staging dir of run %s: %w", m.RunID, err)
		}
	}
	for _, p := range []string{manifestPath(stateDir, m.RunID), lockPath(stateDir, m.RunID)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", p, err)
		}
	}
	return nil
}

type staging uint8

const (
	stagingIntact staging = iota
	stagingGone
	stagingReplaced
)

// stagingState tells whether the run dir is still a real directory below
// the sandbox home; the sandbox can write there, so it may have replaced
// the dir, or .sbx-staging itself, by a symlink.
func stagingState(home *os.Root, runRel string) (staging, error) {
	for _, p := range []string{StagingDir, runRel} {
		fi, err := home.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return stagingGone, nil
		case err != nil:
			return 0, err
		case !fi.IsDir():
			return stagingReplaced, nil
		}
	}
	return stagingIntact, nil
}

// copyBack brings the regular files of one staged directory back to its
// host directory.
func copyBack(run *os.Root, e *entry, runID string, warn io.Writer) error {
	staged, err := run.OpenRoot(e.Staged)
	if errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(warn, "sbx: %s: the staged copy was removed inside the sandbox; the host copy is unchanged\n", e.Arg)
		return nil
	}
	if err != nil {
		return fmt.Errorf("open staged copy: %w", err)
	}
	defer staged.Close()
	files := listFiles(staged, e, warn)
	if len(files) == 0 {
		return nil
	}
	host, err := openHostDir(e)
	if err != nil {
		return err
	}
	defer host.Close()
	var errs []error
	for _, rel := range files {
		if err := copyBackFile(staged, host, rel, e, runID, warn); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", filepath.Join(e.Host, rel), err))
		}
	}
	return errors.Join(errs...)
}

// listFiles returns the regular files of the staged directory (below it
// too when e.Recursive), sorted. Anything else the sandbox left there
// (symlinks, FIFOs, ...) is ignored with a warning.
func listFiles(staged *os.Root, e *entry, warn io.Writer) []string {
	var files []string
	var walk func(dir string)
	walk = func(dir string) {
		d, err := staged.Open(dir)
		if err != nil {
			fmt.Fprintf(warn, "sbx: %s: cannot read the staged copy: %v\n", e.Arg, err)
			return
		}
		ents, err := d.ReadDir(-1)
		d.Close()
		if err != nil {
			fmt.Fprintf(warn, "sbx: %s: cannot read the staged copy: %v\n", e.Arg, err)
		}
		sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
		for _, ent := range ents {
			rel := path.Join(dir, ent.Name())
			if dir == "." {
				rel = ent.Name()
			}
			fi, err := staged.Lstat(rel)
			switch {
			case err != nil:
				fmt.Fprintf(warn, "sbx: %s: cannot read %s: %v\n", e.Arg, rel, err)
			case fi.IsDir():
				if e.Recursive {
					walk(rel)
				}
			case !fi.Mode().IsRegular():
				fmt.Fprintf(warn, "sbx: %s: ignoring %s: not a regular file\n", e.Arg, rel)
			case len(files) >= maxCopyBackFiles:
				fmt.Fprintf(warn, "sbx: %s: ignoring %s: more than %d files\n", e.Arg, rel, maxCopyBackFiles)
			default:
				files = append(files, rel)
			}
		}
	}
	walk(".")
	return files
}

// openHostDir opens the host directory of e, creating it (0700, its parent
// must exist) for an output directory that did not exist at staging.
func openHostDir(e *entry) (*os.Root, error) {
	h, err := os.OpenRoot(e.Host)
	if errors.Is(err, fs.ErrNotExist) && e.CreateHost {
		parent, perr := os.OpenRoot(filepath.Dir(e.Host))
		if perr != nil {
			return nil, fmt.Errorf("open host directory: %w", perr)
		}
		perr = parent.Mkdir(filepath.Base(e.Host), 0o700)
		parent.Close()
		if perr != nil && !errors.Is(perr, fs.ErrExist) {
			return nil, fmt.Errorf("create host directory: %w", perr)
		}
		h, err = os.OpenRoot(e.Host)
	}
	if err != nil {
		return nil, fmt.Errorf("open host directory: %w", err)
	}
	return h, nil
}

// copyBackFile brings one staged file back:
//   - unchanged since staging: the host file is not touched;
//   - the host already holds the same content: nothing to do (a retry);
//   - staged from an existing host file that is still as it was (size,
//     mtime and hash): replaced atomically;
//   - new, and the host has no such file: created atomically;
//   - otherwise the host changed meanwhile: both are kept, the sandbox's
//     version lands beside as <name>.sbx-conflict-<run-id><ext>.
func copyBackFile(staged, host *os.Root, rel string, e *entry, runID string, warn io.Writer) error {
	rec, had := e.Files[rel]
	sf, err := staged.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("open staged copy: %w", err)
	}
	defer sf.Close()
	if fi, err := sf.Stat(); err != nil || !fi.Mode().IsRegular() {
		fmt.Fprintf(warn, "sbx: %s: ignoring %s: not a regular file\n", e.Arg, rel)
		return nil
	}
	sum, err := hashReader(sf)
	if err != nil {
		return fmt.Errorf("read staged copy: %w", err)
	}
	if had && sum == rec.SHA256 {
		return nil
	}
	hi, herr := host.Lstat(rel)
	if herr != nil && !errors.Is(herr, fs.ErrNotExist) {
		return fmt.Errorf("stat host file: %w", herr)
	}
	hostSum := ""
	if herr == nil && hi.Mode().IsRegular() {
		if hostSum, err = hashFile(host, rel); err != nil {
			return fmt.Errorf("read host file: %w", err)
		}
		if hostSum == sum {
			return nil
		}
	}
	perm, uid, gid := fs.FileMode(0o600), -1, -1
	if had {
		perm, uid, gid = fs.FileMode(rec.Mode).Perm(), rec.UID, rec.GID
	}
	switch {
	case had && herr == nil && hi.Mode().IsRegular() && hi.Size() == rec.Size &&
		hi.ModTime().UnixNano() == rec.MtimeNS && hostSum == rec.SHA256:
		return writeHost(host, rel, sf, perm, uid, gid, true, runID)
	case !had && herr != nil:
		err := writeHost(host, rel, sf, perm, uid, gid, false, runID)
		if !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	// The host side changed during the run: keep both.
	dir, base := path.Split(rel)
	for n := 0; n < 100; n++ {
		name := path.Join(dir, conflictName(base, runID, n))
		err := writeHost(host, name, sf, perm, uid, gid, false, runID)
		if errors.Is(err, fs.ErrExist) {
			if s, herr := hashFile(host, name); herr == nil && s == sum {
				return nil // written by an earlier, interrupted attempt
			}
			continue
		}
		if err != nil {
			return err
		}
		what := "changed"
		if had && herr != nil {
			what = "was removed"
		}
		fmt.Fprintf(warn, "sbx: %s %s on the host during the run; kept it, the sandbox's version is %s\n",
			filepath.Join(e.Host, rel), what, filepath.Join(e.Host, name))
		return nil
	}
	return fmt.Errorf("no free name for the sandbox's version")
}

// writeHost writes src to host/rel atomically: a temp file beside it,
// fsync, then rename (replace) or hard link (never replacing; fs.ErrExist
// if rel exists), then fsync of the directory.
func writeHost(host *os.Root, rel string, src io.ReadSeeker, perm fs.FileMode, uid, gid int, replace bool, runID string) error {
	if _, err := src.Seek(0, io.SeekStart); err != nil {
		return err
	}
	dir := path.Dir(rel)
	if dir != "." {
		if err := host.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create host directory: %w", err)
		}
	}
	if uid < 0 {
		uid, gid = ownerOf(host, dir)
	}
	tmp := path.Join(dir, "."+path.Base(rel)+".sbx-tmp-"+runID)
	_ = host.Remove(tmp) // left by an interrupted attempt
	f, err := host.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("create temp file: %w", err)
	}
	_, err = io.Copy(f, src)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil && os.Geteuid() == 0 && uid >= 0 {
		_ = f.Chown(uid, gid) // best effort: keep the owner when sbx runs as root
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if replace {
			err = host.Rename(tmp, rel)
		} else {
			err = host.Link(tmp, rel)
			if err != nil && !errors.Is(err, fs.ErrExist) {
				// No hard links here: a rename after an existence check.
				if _, lerr := host.Lstat(rel); errors.Is(lerr, fs.ErrNotExist) {
					err = host.Rename(tmp, rel)
				}
			}
		}
	}
	_ = host.Remove(tmp)
	if err != nil {
		return err
	}
	return syncRootDir(host, dir)
}

// ownerOf returns the owner of host/dir, for new files written as root.
func ownerOf(host *os.Root, dir string) (int, int) {
	fi, err := host.Stat(dir)
	if err != nil {
		return -1, -1
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), int(st.Gid)
	}
	return -1, -1
}

func syncRootDir(r *os.Root, dir string) error {
	d, err := r.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	return nil
}

func hashReader(r io.ReadSeeker) (string, error) {
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func hashFile(r *os.Root, name string) (string, error) {
	f, err := r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return hashReader(f)
}

// Recover completes the copy-back of runs whose sbx died before Finish
// (killed, crashed, power loss) and removes their staging dirs. It looks at
// the manifests in stateDir (Options.StateDir) and skips every run whose
// lock is still held, i.e. whose sbx is alive, in this process or another.
// Call it before Prepare on every run (and from "sbx recover").
func Recover(stateDir string, warn io.Writer) error {
	if warn == nil {
		warn = io.Discard
	}
	ents, err := os.ReadDir(stateDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read state dir: %w", err)
	}
	ids := map[string]bool{}
	for _, ent := range ents {
		name := ent.Name()
		if strings.HasPrefix(name, ".") && strings.Contains(name, ".lock.tmp-") {
			// A Prepare killed while creating its lock. A young one
			// may be a live Prepare between its create and its flock.
			if fi, err := ent.Info(); err != nil || time.Since(fi.ModTime()) < time.Minute {
				continue
			}
			if f, held, _ := tryLock(filepath.Join(stateDir, name)); f != nil && !held {
				os.Remove(filepath.Join(stateDir, name))
				f.Close()
			}
			continue
		}
		for _, sfx := range []string{".lock", ".json"} {
			if id, ok := strings.CutSuffix(name, sfx); ok && validRunID(id) && !strings.HasPrefix(id, ".") {
				ids[id] = true
			}
		}
	}
	var errs []error
	for _, id := range sortedKeys(ids) {
		if err := recoverRun(stateDir, id, warn); err != nil {
			errs = append(errs, fmt.Errorf("recover run %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

func recoverRun(stateDir, id string, warn io.Writer) error {
	lf, held, err := tryLock(lockPath(stateDir, id))
	if err != nil {
		return err
	}
	if held {
		return nil // its sbx is alive
	}
	if lf == nil {
		// A manifest without a lock file: take a fresh lock first.
		if lf, err = createLock(stateDir, id); err != nil {
			return nil // someone else is on it
		}
	}
	defer lf.Close()
	m, err := readManifest(stateDir, id)
	if errors.Is(err, fs.ErrNotExist) {
		// Finished meanwhile, or killed before the first manifest (nothing
		// was staged yet).
		os.Remove(lockPath(stateDir, id))
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(warn, "sbx: completing the copy-back of run %s (its sbx, pid %d, is gone)\n", id, m.PID)
	return finishRun(stateDir, m, warn)
}
