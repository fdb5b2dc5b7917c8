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
	"strings"
	"syscall"
	"time"

	"github.com/sbx-sandbox/sbx/hostfs"

	"github.com/sbx-sandbox/sbx/internal/runid"
)

// Copy-back is bounded, so that a sandbox cannot fill the host disk or
// flood a host directory through it (a sparse 20 GiB "session" is refused
// by its size before a byte is read).
const (
	// maxCopyBackFiles bounds the files one entry brings back.
	maxCopyBackFiles = 1000
	// MaxCopyBackFile is the largest file copied back: 8x the staging cap,
	// room for a session that grew during the run.
	MaxCopyBackFile = 8 * MaxFileSize
	// MaxCopyBackRun bounds what one run copies back in all.
	MaxCopyBackRun = 256 << 20
	// maxAttempts is how many failed copy-backs of a run are retried
	// (by the run itself, then by later runs' Recover) before it is given
	// up: its staged files then stay in the sandbox home, named in one
	// line, and no later run spends time on it again.
	maxAttempts = 3
)

// errGivenUp marks a copy-back that failed for the last time.
var errGivenUp = errors.New("given up")

// finishRun copies back every entry of m with the invoking user's
// identity and, if all succeeded, empties the run dir and removes the
// manifest and the lock file. The caller holds the lock. A failure is
// counted in the manifest; the last allowed one gives the run up
// (errGivenUp).
func finishRun(stateDir string, m *manifest, warn io.Writer) error {
	err := copyBackRun(m, warn)
	if err != nil {
		m.Attempts++
		if m.Attempts < maxAttempts && !permanent(err) {
			if werr := writeManifest(stateDir, m); werr == nil {
				fmt.Fprintf(warn, "sbx: keeping the staged files of run %s for a later retry (attempt %d of %d; the next sbx run retries)\n",
					m.RunID, m.Attempts, maxAttempts)
				return err
			}
		}
		fmt.Fprintf(warn, "sbx: giving up the copy-back of run %s: %s\n", m.RunID, giveUp(m))
		err = fmt.Errorf("%w: %w", errGivenUp, err)
	}
	for _, p := range []string{manifestPath(stateDir, m.RunID), lockPath(stateDir, m.RunID)} {
		if rerr := os.Remove(p); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
			err = fmt.Errorf("remove %s: %w", p, rerr)
		}
	}
	return err
}

// permanent tells a failure no retry can mend: a directory replaced since
// staging (or by a symlink) stays replaced.
func permanent(err error) bool {
	return errors.Is(err, hostfs.ErrReplaced) || errors.Is(err, syscall.ELOOP)
}

// copyBackRun is finishRun's part on files the sandbox could change. The
// run dir is opened as sbx itself (it may lie in sbx's state dir, which
// the user cannot search) and must be the one recorded; everything in it
// is read, and every host file written, with the user's identity, never
// following a symlink.
func copyBackRun(m *manifest, warn io.Writer) error {
	run, err := hostfs.OpenDir(m.Staging, &m.StagingID)
	if errors.Is(err, fs.ErrNotExist) {
		if len(m.Entries) > 0 {
			fmt.Fprintf(warn, "sbx: the run dir of run %s is gone; nothing to copy back\n", m.RunID)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("open run dir of run %s: %w", m.RunID, err)
	}
	defer run.Close()
	return m.cred().Do(func() error {
		budget := int64(MaxCopyBackRun)
		var errs []error
		for i := range m.Entries {
			if err := copyBack(run, &m.Entries[i], m.RunID, &budget, warn); err != nil {
				errs = append(errs, fmt.Errorf("copy back %s: %w", m.Entries[i].Arg, err))
			}
		}
		if len(errs) > 0 {
			return errors.Join(errs...)
		}
		if err := run.Empty(); err != nil {
			return fmt.Errorf("empty the run dir of run %s: %w", m.RunID, err)
		}
		if m.Throwaway {
			return removeHome(m)
		}
		return nil
	})
}

// keptDir is where, below the user's home, the files of a given-up
// copy-back are kept (one directory per run).
const keptDir = ".local/share/sbx/kept"

// giveUp keeps what the sandbox wrote to the session-like values of a run
// whose copy-back failed for the last time in ~/.local/share/sbx/kept/
// <run-id>/ (the user's own, never the sandbox home, which other runs
// share), with the user's identity, and returns the line saying where.
func giveUp(m *manifest) string {
	if m.KeepHome == "" {
		return "there is no home to keep what the sandbox wrote in; it is discarded"
	}
	run, err := hostfs.OpenDir(m.Staging, &m.StagingID)
	if err != nil {
		return fmt.Sprintf("what the sandbox wrote is lost (%v)", err)
	}
	defer run.Close()
	dest := path.Join(keptDir, m.RunID)
	err = m.cred().Do(func() error {
		home, err := hostfs.OpenDir(m.KeepHome, nil)
		if err != nil {
			return err
		}
		defer home.Close()
		if err := home.MkdirAll(dest, 0o700); err != nil {
			return err
		}
		for i := range m.Entries {
			e := &m.Entries[i]
			staged, err := run.OpenDir(e.Staged)
			if err != nil {
				continue
			}
			for _, rel := range listFiles(staged, e, io.Discard) {
				to := path.Join(dest, e.Staged, rel)
				if err := home.MkdirAll(path.Dir(to), 0o700); err != nil {
					staged.Close()
					return err
				}
				sf, err := staged.Open(rel)
				if err != nil {
					continue
				}
				err = writeHost(home, to, sf, 0o600, -1, -1, false, m.RunID)
				sf.Close()
				if err != nil && !errors.Is(err, fs.ErrExist) {
					staged.Close()
					return err
				}
			}
			staged.Close()
		}
		return nil
	})
	if err != nil {
		return fmt.Sprintf("what the sandbox wrote could not be kept (%v); it is discarded", err)
	}
	return "what the sandbox wrote is kept in " + filepath.Join(m.KeepHome, dest)
}

// removeHome removes a throwaway sandbox home whose copy-back is done.
func removeHome(m *manifest) error {
	parent, err := hostfs.OpenDir(filepath.Dir(m.SandboxHome), nil)
	if err != nil {
		return fmt.Errorf("remove throwaway home: %w", err)
	}
	defer parent.Close()
	base := filepath.Base(m.SandboxHome)
	d, err := parent.OpenDir(base)
	if err != nil {
		return nil // gone already
	}
	id, err := d.ID()
	d.Close()
	if err != nil || id != m.HomeID {
		return nil // not the home recorded: leave it alone
	}
	if err := parent.RemoveAll(base); err != nil {
		return fmt.Errorf("remove throwaway home: %w", err)
	}
	return nil
}

// copyBack brings the staged file of one entry (a --session-dir: its
// session files) back to its host directory, which must still be the one
// recorded at staging.
func copyBack(run *hostfs.Dir, e *entry, runID string, budget *int64, warn io.Writer) error {
	staged, err := run.OpenDir(e.Staged)
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
		if err := copyBackFile(staged, host, rel, e, runID, budget, warn); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", filepath.Join(e.Host, rel), err))
		}
	}
	return errors.Join(errs...)
}

// listFiles returns the files of the staged directory that may come back
// (entry.wants), sorted. Anything else the sandbox left there (other
// files, symlinks, FIFOs, ...) is ignored, with one warning.
func listFiles(staged *hostfs.Dir, e *entry, warn io.Writer) []string {
	var files []string
	ignored := 0
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		names, err := staged.ReadDir(dir)
		if err != nil {
			fmt.Fprintf(warn, "sbx: %s: cannot read the staged copy: %v\n", e.Arg, err)
			return
		}
		for _, name := range names {
			rel := path.Join(dir, name)
			fi, err := staged.Lstat(rel)
			switch {
			case err != nil:
				fmt.Fprintf(warn, "sbx: %s: cannot read %s: %v\n", e.Arg, rel, err)
			case fi.IsDir():
				if e.Recursive && depth < maxCopyBackDepth {
					walk(rel, depth+1)
				}
			case !e.wants(rel):
				ignored++
			case !fi.Mode().IsRegular():
				fmt.Fprintf(warn, "sbx: %s: ignoring %s: not a regular file\n", e.Arg, rel)
			case len(files) >= maxCopyBackFiles:
				fmt.Fprintf(warn, "sbx: %s: ignoring %s: more than %d files\n", e.Arg, rel, maxCopyBackFiles)
			default:
				files = append(files, rel)
			}
		}
	}
	walk(".", 0)
	if ignored > 0 {
		what := "the staged file comes"
		if e.Recursive {
			what = "session files (*" + SessionExt + ") come"
		}
		fmt.Fprintf(warn, "sbx: %s: ignoring %d other entries the sandbox left beside it (only %s back)\n", e.Arg, ignored, what)
	}
	return files
}

// maxCopyBackDepth bounds how deep a --session-dir is walked.
const maxCopyBackDepth = 8

// openHostDir opens the host directory of e, which must be the directory
// recorded at staging, creating it (0700, in the recorded parent) for an
// output directory that did not exist then.
func openHostDir(e *entry) (*hostfs.Dir, error) {
	if !e.CreateHost {
		h, err := hostfs.OpenDir(e.Host, &e.HostID)
		if err != nil {
			return nil, fmt.Errorf("open host directory: %w", err)
		}
		return h, nil
	}
	parent, err := hostfs.OpenDir(filepath.Dir(e.Host), &e.HostID)
	if err != nil {
		return nil, fmt.Errorf("open host directory: %w", err)
	}
	defer parent.Close()
	base := filepath.Base(e.Host)
	if err := parent.Mkdir(base, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("create host directory: %w", err)
	}
	h, err := parent.OpenDir(base)
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
//
// A file over MaxCopyBackFile, or over what is left of the run's
// MaxCopyBackRun, is not copied (a warning says so): no retry could change
// that.
func copyBackFile(staged, host *hostfs.Dir, rel string, e *entry, runID string, budget *int64, warn io.Writer) error {
	rec, had := e.Files[rel]
	sf, err := staged.Open(rel)
	if err != nil {
		return fmt.Errorf("open staged copy: %w", err)
	}
	defer sf.Close()
	fi, err := sf.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		fmt.Fprintf(warn, "sbx: %s: ignoring %s: not a regular file\n", e.Arg, rel)
		return nil
	}
	switch {
	case fi.Size() > MaxCopyBackFile:
		fmt.Fprintf(warn, "sbx: %s: not copying back %s: %d bytes, over the %s limit per file\n", e.Arg, rel, fi.Size(), sizeString(MaxCopyBackFile))
		return nil
	case fi.Size() > *budget:
		fmt.Fprintf(warn, "sbx: %s: not copying back %s: the run's copy-back is over its %s limit\n", e.Arg, rel, sizeString(MaxCopyBackRun))
		return nil
	}
	*budget -= fi.Size()
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
func writeHost(host *hostfs.Dir, rel string, src io.ReadSeeker, perm fs.FileMode, uid, gid int, replace bool, runID string) error {
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
func ownerOf(host *hostfs.Dir, dir string) (int, int) {
	d, err := host.OpenDir(dir)
	if err != nil {
		return -1, -1
	}
	defer d.Close()
	fi, err := d.Stat()
	if err != nil {
		return -1, -1
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), int(st.Gid)
	}
	return -1, -1
}

func syncRootDir(r *hostfs.Dir, dir string) error {
	d, err := r.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	defer d.Close()
	return d.Sync()
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

func hashFile(r *hostfs.Dir, name string) (string, error) {
	f, err := r.Open(name)
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
// Call it before Prepare on every run.
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
		if id, ok := strings.CutSuffix(name, ".json.tmp"); ok && runid.Valid(id) {
			// A manifest write cut short by a kill; its run's lock
			// tells whether the writer is alive.
			if f, held, _ := tryLock(lockPath(stateDir, id)); !held {
				os.Remove(filepath.Join(stateDir, name))
				if f != nil {
					f.Close()
				}
			}
			continue
		}
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
			if id, ok := strings.CutSuffix(name, sfx); ok && runid.Valid(id) && !strings.HasPrefix(id, ".") {
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
	var stale *staleError
	if errors.As(err, &stale) {
		fmt.Fprintf(warn, "sbx: discarding the staging record of run %s, left by another sbx version (%v); its staged files, if any, stay in the sandbox home\n", id, err)
		os.Remove(manifestPath(stateDir, id))
		os.Remove(lockPath(stateDir, id))
		return nil
	}
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
	if err := finishRun(stateDir, m, warn); err != nil && !errors.Is(err, errGivenUp) {
		return err
	}
	return nil
}

// Pending reports whether a copy-back recorded in stateDir still needs the
// directory dir: a throwaway home, or a run dir (or a directory holding
// one) of a killed run, which must then stay.
func Pending(stateDir, dir string) bool {
	ents, err := os.ReadDir(stateDir)
	if err != nil {
		return false
	}
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		dir = r
	}
	for _, ent := range ents {
		id, ok := strings.CutSuffix(ent.Name(), ".json")
		if !ok || !runid.Valid(id) {
			continue
		}
		if m, err := readManifest(stateDir, id); err == nil && (m.SandboxHome == dir || hostfs.Within(m.Staging, dir)) {
			return true
		}
	}
	return false
}
