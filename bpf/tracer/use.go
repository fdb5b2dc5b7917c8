package tracer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/bpf/pin"
)

// The tracer is attached only while runs use it, because attached it taxes
// every syscall of the host (see the package doc, "Denial tracer"). Runs of
// different sbx processes share one link, pinned at <dir>/link; who uses
// it is tracked by holder directories <dir>/users/u-*, each flocked by its
// holder for as long as it uses the tracer (the kernel drops the lock if
// the holder dies). Attaching and detaching happen under the pin root's
// lock: the first user attaches and pins the link, the last one (the one
// that finds no other held holder directory; unheld ones, left by holders
// that died, are removed) unpins it, which detaches it once no process
// holds it open.

// Use is one run's use of the tracer: while it lives the tracer is
// attached. Release it when the run ends.
type Use struct {
	t      *Tracer
	link   link.Link
	holder string
	fd     int
	dir    *pin.Use // the pin directory, held so no other build removes it
}

// Acquire attaches the tracer if no run uses it yet, and registers this
// use. Events of a run reach its ring only while some use is held, so
// acquire before the run's first task starts.
func (t *Tracer) Acquire() (_ *Use, err error) {
	lock, err := pin.LockRoot(t.pinRoot)
	if err != nil {
		return nil, fmt.Errorf("use denial tracer: %w", err)
	}
	defer lock.Unlock()
	dir, err := pin.Hold(t.dir)
	if err != nil {
		return nil, fmt.Errorf("use denial tracer: %w", err)
	}
	users := filepath.Join(t.dir, "users")
	if err := os.Mkdir(users, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		dir.Release()
		return nil, fmt.Errorf("use denial tracer: %w", err)
	}
	holder, err := os.MkdirTemp(users, "u-")
	if err != nil {
		dir.Release()
		return nil, fmt.Errorf("use denial tracer: %w", err)
	}
	u := &Use{t: t, holder: holder, fd: -1, dir: dir}
	defer func() {
		if err != nil {
			u.close()
		}
	}()
	if u.fd, err = lockDir(holder); err != nil {
		return nil, fmt.Errorf("use denial tracer: %w", err)
	}
	pin := filepath.Join(t.dir, "link")
	u.link, err = link.LoadPinnedLink(pin, nil)
	if err == nil {
		return u, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("use denial tracer: %w", err)
	}
	if u.link, err = link.AttachTracing(link.TracingOptions{Program: t.prog, AttachType: ebpf.AttachTraceRawTp}); err != nil {
		return nil, fmt.Errorf("use denial tracer: attach to sys_exit: %w", err)
	}
	if err := u.link.Pin(pin); err != nil {
		return nil, fmt.Errorf("use denial tracer: pin link: %w", err)
	}
	return u, nil
}

// lockDir opens dir and flocks it exclusively without waiting (an error
// wrapping EWOULDBLOCK if another holds it).
func lockDir(dir string) (int, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	for {
		err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		return -1, &os.PathError{Op: "flock", Path: dir, Err: err}
	}
	return fd, nil
}

func (u *Use) close() {
	if u.link != nil {
		u.link.Close()
		u.link = nil
	}
	if u.fd >= 0 {
		unix.Close(u.fd)
		u.fd = -1
	}
	if u.holder != "" {
		os.Remove(u.holder)
		u.holder = ""
	}
	u.dir.Release()
}

// Release ends this use; the last use detaches the tracer.
func (u *Use) Release() error {
	if u.t == nil {
		return nil
	}
	lock, err := pin.LockRoot(u.t.pinRoot)
	if err != nil {
		u.close()
		return fmt.Errorf("release denial tracer: %w", err)
	}
	defer lock.Unlock()
	u.close()
	dir := u.t.dir
	u.t = nil
	live, err := liveHolders(filepath.Join(dir, "users"))
	if errors.Is(err, os.ErrNotExist) {
		return nil // removed as stale by a newer sbx: nothing pinned to undo
	}
	if err != nil {
		return fmt.Errorf("release denial tracer: %w", err)
	}
	if live > 0 {
		return nil
	}
	if err := os.Remove(filepath.Join(dir, "link")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("release denial tracer: unpin link: %w", err)
	}
	return nil
}

// liveHolders counts the holder directories in users that are locked,
// removing those that are not (left by a holder that died).
func liveHolders(users string) (int, error) {
	entries, err := os.ReadDir(users)
	if err != nil {
		return 0, err
	}
	live := 0
	for _, e := range entries {
		p := filepath.Join(users, e.Name())
		fd, err := lockDir(p)
		if errors.Is(err, unix.EWOULDBLOCK) {
			live++
			continue
		}
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return 0, err
		}
		os.Remove(p)
		unix.Close(fd)
	}
	return live, nil
}

// Attached reports whether the tracer's link is pinned (some run uses it),
// for sbx doctor and tests.
func (t *Tracer) Attached() bool {
	_, err := os.Stat(filepath.Join(t.dir, "link"))
	return err == nil
}
