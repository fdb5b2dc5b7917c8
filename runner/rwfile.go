package runner

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/hostfs"
)

// A single file given with --rw used to be bind-mounted over its own path.
// A program that saves a file atomically (writes a temporary file beside
// it, then renames it over the file: editors, npm, Claude Code's
// ~/.claude.json) then fails with EBUSY, since a mount point cannot be
// replaced. Where the file's directory is writable inside anyway, sbx
// shows the file without a mount:
//   - a file in the writable workspace is the workspace's own (--rw only
//     takes it out of the protected entries): the program's rename reaches
//     the host as any other write there;
//   - a file below the user's home (inside, the sbx home lies there) is
//     copied into the sbx home before the run and, if the program changed
//     it, copied back after it, as the user, without following symlinks,
//     replacing the host file atomically; if the host file changed during
//     the run as well, the host's is kept and the sandbox's version stays
//     in the sbx home, named on stderr.
// Elsewhere (a directory that is read-only inside, /tmp) the file is still
// bound, and an atomic save there fails as before: --rw its directory.

// maxRWCopy is the largest file copied in and back (larger ones are bound).
const maxRWCopy = 64 << 20

// rwCopy is one --rw file copied into the sbx home.
type rwCopy struct {
	host string   // the resolved host path
	rel  string   // its path below the home
	sum  [32]byte // of what was copied in
	st   unix.Stat_t
}

// splitRWFiles takes the single files out of rw that need no bind: those
// in the writable workspace and those copied into the home (returned).
func (o *Options) splitRWFiles(rw []string, ws string) (binds, copies []string) {
	for _, p := range rw {
		fi, err := os.Stat(p)
		switch {
		case err != nil || fi.IsDir():
			binds = append(binds, p)
		case o.Write && within(p, ws):
			// Shown by the workspace itself.
		case o.who.home != "" && o.who.home != "/" && within(p, realPath(o.who.home)) && p != realPath(o.who.home) &&
			!within(p, ws) && fi.Size() <= maxRWCopy && !o.mountedElsewhere(p):
			copies = append(copies, p)
		default:
			binds = append(binds, p)
		}
	}
	return binds, copies
}

// mountedElsewhere reports whether p lies below another --ro or --rw
// directory (which would hide the home's copy).
func (o *Options) mountedElsewhere(p string) bool {
	for _, m := range append(append([]string{}, o.ro...), o.rw...) {
		if m != p && within(p, m) {
			return true
		}
	}
	return false
}

// copyInRW copies each file of copies into the sbx home (host directory
// home, shown at the user's home path) as the user.
func (o *Options) copyInRW(copies []string, home string) ([]rwCopy, error) {
	var out []rwCopy
	userHome := realPath(o.who.home)
	for _, p := range copies {
		rel, err := filepath.Rel(userHome, p)
		if err != nil {
			return nil, err
		}
		c := rwCopy{host: p, rel: rel}
		err = o.cred.Do(func() error {
			f, err := hostfs.OpenPath(p, unix.O_RDONLY|unix.O_NONBLOCK)
			if err != nil {
				return err
			}
			defer f.Close()
			if err := unix.Fstat(int(f.Fd()), &c.st); err != nil {
				return err
			}
			data, err := io.ReadAll(io.LimitReader(f, maxRWCopy+1))
			if err != nil {
				return err
			}
			c.sum = sha256.Sum256(data)
			d, err := hostfs.OpenDir(home, nil)
			if err != nil {
				return err
			}
			defer d.Close()
			if dir := filepath.Dir(rel); dir != "." {
				if err := d.MkdirAll(dir, 0o700); err != nil {
					return err
				}
			}
			return replaceIn(d, rel, data, os.FileMode(c.st.Mode&0o777))
		})
		if err != nil {
			return nil, fmt.Errorf("--rw %s: copy into the sandbox home: %w", p, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// copyBackRW copies back, after the run, each file the program changed.
func (o *Options) copyBackRW(copies []rwCopy, home string) error {
	var errs []error
	for _, c := range copies {
		if err := o.cred.Do(func() error { return c.back(home, o.Log) }); err != nil {
			errs = append(errs, fmt.Errorf("--rw %s: %w", c.host, err))
		}
	}
	return errors.Join(errs...)
}

func (c rwCopy) back(home string, log io.Writer) error {
	d, err := hostfs.OpenDir(home, nil)
	if err != nil {
		return err
	}
	defer d.Close()
	f, err := d.Open(c.rel)
	if errors.Is(err, unix.ENOENT) {
		fmt.Fprintf(log, "sbx: --rw %s: the program removed it; the host's file is kept\n", c.host)
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the sandbox's copy: %w", err)
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("the sandbox's copy %s is no longer a regular file: not copied back", filepath.Join(home, c.rel))
	}
	data, err := io.ReadAll(io.LimitReader(f, maxRWCopy+1))
	if err != nil {
		return err
	}
	if len(data) > maxRWCopy {
		return fmt.Errorf("the sandbox's copy grew past %d MiB: not copied back (it stays at %s)", maxRWCopy>>20, filepath.Join(home, c.rel))
	}
	if sha256.Sum256(data) == c.sum {
		return nil
	}
	hostDir, err := hostfs.OpenDir(filepath.Dir(c.host), nil)
	if err != nil {
		return err
	}
	defer hostDir.Close()
	var now unix.Stat_t
	if err := unix.Fstatat(unix.AT_FDCWD, c.host, &now, unix.AT_SYMLINK_NOFOLLOW); err != nil ||
		now.Ino != c.st.Ino || now.Dev != c.st.Dev || now.Size != c.st.Size || now.Mtim != c.st.Mtim {
		fmt.Fprintf(log, "sbx: --rw %s: changed on the host during the run too: kept the host's; the sandbox's version is %s\n", c.host, filepath.Join(home, c.rel))
		return nil
	}
	return replaceIn(hostDir, filepath.Base(c.host), data, os.FileMode(c.st.Mode&0o777))
}

// replaceIn writes data to name in d atomically: a new file beside it,
// synced, renamed over it (never writing through a link planted there).
func replaceIn(d *hostfs.Dir, name string, data []byte, perm os.FileMode) error {
	tmp := filepath.Join(filepath.Dir(name), ".sbx-rw-"+filepath.Base(name)+".tmp")
	_ = d.Remove(tmp)
	f, err := d.OpenFile(tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, werr := io.Copy(f, bytes.NewReader(data))
	if werr == nil {
		werr = f.Chmod(perm)
	}
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = d.Rename(tmp, name)
	}
	if werr != nil {
		_ = d.Remove(tmp)
	}
	return werr
}
