package home

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/hostfs"
	"github.com/sbx-sandbox/sbx/sandbox"
)

// A single file given with --rw used to be bind-mounted over its own path.
// Where the file's directory is writable inside anyway, sbx shows the file
// without binding the host file:
//   - a file in the writable workspace is the workspace's own (--rw only
//     takes it out of the protected entries): the program's writes, a save
//     by rename included, reach the host as any other write there;
//   - a file below the user's home (inside, the sbx home lies there) is
//     copied, as the user, into the run's own dir (see rundir.go), bound at
//     its place in the home for this run alone (a concurrent or later run
//     of the same workspace, which shares the home, never sees it), and,
//     if the program changed it, copied back after the run, as the user,
//     without following symlinks, replacing the host file atomically; if
//     the host file changed during the run as well, the host's is kept and
//     the sandbox's version is written beside it, named on stderr. The
//     copy is a mount point inside, so a save by rename over it fails
//     (EBUSY), as for a bound file: a program that saves that way needs
//     --rw of the file's directory.
// Elsewhere (a directory that is read-only inside, /tmp) the host file is
// bound.

// maxRWCopy is the largest file copied in and back (larger ones are bound).
const maxRWCopy = 64 << 20

// RWCopy is one --rw file copied into the run dir. The run's copies are
// recorded there too (rwRecord), so that the sweep after a killed run can
// copy them back (see sweepRunDirs).
type RWCopy struct {
	Host string      `json:"host"` // the resolved host path
	Name string      `json:"name"` // its copy's name in the run dir's rw/
	Sum  [32]byte    `json:"sum"`  // of what was copied in
	St   unix.Stat_t `json:"st"`   // of the host file then
}

// rwRecord is the name of the record of a run's copies in its run dir
// (which no sandbox sees: only each copy is bound).
const rwRecord = "rw.json"

// RWScope is what SplitRWFiles and CopyInRW need to know of a run.
type RWScope struct {
	// WS is the workspace, writable under Write.
	WS    string
	Write bool
	// RO and RW are the run's --ro and --rw paths (resolved).
	RO, RW []string
	// UserHome is the invoking user's home.
	UserHome string
	// Cred is the invoking user's, whose rights every copy uses.
	Cred hostfs.Cred
	// Log receives sbx's messages.
	Log io.Writer
}

// SplitRWFiles takes the single files out of rw that need no bind: those
// in the writable workspace and those copied into the home (returned).
func (o RWScope) SplitRWFiles(rw []string) (binds, copies []string) {
	ws := o.WS
	for _, p := range rw {
		fi, err := os.Stat(p)
		switch {
		case err != nil || fi.IsDir():
			binds = append(binds, p)
		case o.Write && hostfs.Under(p, ws):
			// Shown by the workspace itself.
		case o.UserHome != "" && o.UserHome != "/" && hostfs.Under(p, realPath(o.UserHome)) && p != realPath(o.UserHome) &&
			!hostfs.Under(p, ws) && fi.Size() <= maxRWCopy && !o.mountedElsewhere(p):
			copies = append(copies, p)
		default:
			binds = append(binds, p)
		}
	}
	return binds, copies
}

// mountedElsewhere reports whether p lies below another --ro or --rw
// directory (which would hide the home's copy).
func (o RWScope) mountedElsewhere(p string) bool {
	for _, m := range append(append([]string{}, o.RO...), o.RW...) {
		if m != p && hostfs.Under(p, m) {
			return true
		}
	}
	return false
}

// CopyInRW copies each file of copies into the run dir rd as the user
// and returns the binds that show each at its place below homeInside (the
// sbx home, home on the host).
func (o RWScope) CopyInRW(copies []string, rd *RunDir, home, homeInside string) ([]RWCopy, []sandbox.Bind, error) {
	var (
		out   []RWCopy
		binds []sandbox.Bind
	)
	userHome := realPath(o.UserHome)
	for i, p := range copies {
		rel, err := filepath.Rel(userHome, p)
		if err != nil {
			return nil, nil, err
		}
		c := RWCopy{Host: p, Name: strconv.Itoa(i)}
		err = o.Cred.Do(func() error {
			f, err := hostfs.OpenPath(p, unix.O_RDONLY|unix.O_NONBLOCK)
			if err != nil {
				return err
			}
			defer f.Close()
			if err := unix.Fstat(int(f.Fd()), &c.St); err != nil {
				return err
			}
			if c.St.Mode&unix.S_IFMT != unix.S_IFREG {
				return errors.New("not a regular file")
			}
			data, err := io.ReadAll(io.LimitReader(f, maxRWCopy+1))
			if err != nil {
				return err
			}
			c.Sum = sha256.Sum256(data)
			d, err := rd.dir.OpenDir(runRWDir)
			if err != nil {
				return err
			}
			defer d.Close()
			if err := replaceIn(d, c.Name, data, os.FileMode(c.St.Mode&0o777)); err != nil {
				return err
			}
			if emptyStaleCopy(home, rel, c.Sum) {
				fmt.Fprintf(o.Log, "sbx: --rw %s: emptied the copy an earlier sbx version left in the sbx home, %s\n", p, filepath.Join(home, rel))
			}
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("--rw %s: copy for the sandbox: %w", p, err)
		}
		out = append(out, c)
		binds = append(binds, sandbox.Bind{
			Source:      filepath.Join(rd.Sub(runRWDir), c.Name),
			Destination: filepath.Join(homeInside, rel),
			Writable:    true,
		})
	}
	if len(out) > 0 {
		data, err := json.Marshal(out)
		if err == nil {
			err = o.Cred.Do(func() error { return replaceIn(rd.dir, rwRecord, data, 0o600) })
		}
		if err != nil {
			return nil, nil, fmt.Errorf("--rw: record the copies: %w", err)
		}
	}
	return out, binds, nil
}

// emptyStaleCopy empties the file rel of the sbx home home when it holds
// exactly sum: a copy of a --rw file that an earlier sbx version left
// there, readable by every run of the workspace. It runs as the user and
// follows no symlink; it reports whether it emptied one.
func emptyStaleCopy(home, rel string, sum [32]byte) bool {
	h, err := hostfs.OpenDir(home, nil)
	if err != nil {
		return false
	}
	defer h.Close()
	f, err := h.OpenFile(filepath.ToSlash(rel), unix.O_RDWR|unix.O_NONBLOCK, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 || fi.Size() > maxRWCopy {
		return false
	}
	data, err := io.ReadAll(io.LimitReader(f, maxRWCopy+1))
	if err != nil || sha256.Sum256(data) != sum {
		return false
	}
	return f.Truncate(0) == nil
}

// CopyBackRW copies back each of copies that the program changed, with
// the identity c; a copy that cannot come back is kept below home (see
// keepRW).
func CopyBackRW(copies []RWCopy, rd *RunDir, id string, c hostfs.Cred, home string, log io.Writer) error {
	var errs []error
	for _, cp := range copies {
		if err := c.Do(func() error { return cp.back(rd, id, log) }); err != nil {
			if kept := keepRW(cp, rd, id, c, home); kept != "" {
				err = fmt.Errorf("%w (the sandbox's version is kept in %s)", err, kept)
			}
			errs = append(errs, fmt.Errorf("--rw %s: %w", cp.Host, err))
		}
	}
	return errors.Join(errs...)
}

// keptRWDir is where, below the user's home, the sandbox's version of a
// --rw file whose copy-back failed is kept (the run dir is removed).
const keptRWDir = ".local/share/sbx/kept"

// keepRW keeps the sandbox's version of c, whose copy-back failed, in
// ~/.local/share/sbx/kept/<id>/ below home with the identity cred (never
// in the sbx home, which other runs share), and returns its path ("" if
// it could not, or if it is no regular file: that is never copied).
func keepRW(c RWCopy, rd *RunDir, id string, cred hostfs.Cred, home string) string {
	if home == "" || home == "/" || !filepath.IsAbs(home) {
		return ""
	}
	rel := path.Join(keptRWDir, id, c.Name+"-"+filepath.Base(c.Host))
	err := cred.Do(func() error {
		f, err := rd.dir.Open(path.Join(runRWDir, c.Name))
		if err != nil {
			return err
		}
		defer f.Close()
		if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || fi.Size() > maxRWCopy {
			return errors.New("not kept")
		}
		data, err := io.ReadAll(io.LimitReader(f, maxRWCopy))
		if err != nil {
			return err
		}
		h, err := hostfs.OpenDir(home, nil)
		if err != nil {
			return err
		}
		defer h.Close()
		if err := h.MkdirAll(path.Dir(rel), 0o700); err != nil {
			return err
		}
		return replaceIn(h, rel, data, 0o600)
	})
	if err != nil {
		return ""
	}
	return filepath.Join(home, rel)
}

func (c RWCopy) back(rd *RunDir, id string, log io.Writer) error {
	f, err := rd.dir.Open(path.Join(runRWDir, c.Name))
	if errors.Is(err, unix.ENOENT) {
		fmt.Fprintf(log, "sbx: --rw %s: the program removed it; the host's file is kept\n", c.Host)
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
		return errors.New("the sandbox's copy is no longer a regular file: not copied back")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxRWCopy+1))
	if err != nil {
		return err
	}
	if len(data) > maxRWCopy {
		return fmt.Errorf("the sandbox's copy grew past %d MiB: not copied back", maxRWCopy>>20)
	}
	if sha256.Sum256(data) == c.Sum {
		return nil
	}
	hostDir, err := hostfs.OpenDir(filepath.Dir(c.Host), nil)
	if err != nil {
		return err
	}
	defer hostDir.Close()
	base := filepath.Base(c.Host)
	perm := os.FileMode(c.St.Mode & 0o777)
	now, err := hostDir.Lstat(base)
	if nst, ok := sysStat(now); err != nil || !ok ||
		nst.Ino != c.St.Ino || nst.Dev != c.St.Dev || nst.Size != c.St.Size || nst.Mtim.Sec != c.St.Mtim.Sec || nst.Mtim.Nsec != c.St.Mtim.Nsec {
		if same, _ := sameContent(hostDir, base, data); same {
			return nil // copied back already (by the run, before it was killed)
		}
		kept := base + ".sbx-conflict-" + id
		if err := replaceIn(hostDir, kept, data, perm); err != nil {
			return fmt.Errorf("changed on the host during the run too; keeping the sandbox's version: %w", err)
		}
		fmt.Fprintf(log, "sbx: --rw %s: changed on the host during the run too: kept the host's; the sandbox's version is %s\n", c.Host, filepath.Join(filepath.Dir(c.Host), kept))
		return nil
	}
	return replaceIn(hostDir, base, data, perm)
}

// sameContent reports whether the regular file name in d holds data.
func sameContent(d *hostfs.Dir, name string, data []byte) (bool, error) {
	f, err := d.Open(name)
	if err != nil {
		return false, err
	}
	defer f.Close()
	got, err := io.ReadAll(io.LimitReader(f, int64(len(data))+1))
	if err != nil {
		return false, err
	}
	return bytes.Equal(got, data), nil
}

// sysStat returns fi's stat data (nil fi: false).
func sysStat(fi os.FileInfo) (*syscall.Stat_t, bool) {
	if fi == nil {
		return nil, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return st, ok
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

// realPath is p with symlinks resolved, or p when that fails.
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}
