// Package pin is the one lifecycle of sbx's pinned BPF objects, shared by
// the network wall, the BPF LSM tier and the denial tracer: bpffs at
// [BPFFS], a pin root ([DefaultRoot]) with one directory per program build
// and parent cgroup, an exclusive lock on the root while pins are created,
// repaired or removed ([LockRoot]), and a shared lock on a directory held by
// every handle that uses its pins ([Hold]), so that loading one build's
// pins removes another build's directory only when nobody uses it
// ([RemoveUnused], [RemoveOthers], [SweepOthers]).
package pin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// BPFFS is where bpffs is mounted ([Mount]).
const BPFFS = "/sys/fs/bpf"

// DefaultRoot is the bpffs directory under which sbx pins its objects,
// one subdirectory per program version and parent cgroup.
const DefaultRoot = BPFFS + "/sbx"

// Mount ensures bpffs is mounted at [BPFFS], mounting it (mode 0700) if it is
// not. It is a no-op when bpffs is already there.
func Mount() error {
	if ok, err := isBPFFS(BPFFS); err == nil && ok {
		return nil
	}
	if err := os.MkdirAll(BPFFS, 0o700); err != nil {
		return fmt.Errorf("mount bpffs: %w", err)
	}
	err := unix.Mount("bpf", BPFFS, "bpf", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0700")
	if err != nil {
		if errors.Is(err, unix.ENODEV) {
			err = fmt.Errorf("%w: %w", ebpf.ErrNotSupported, err)
		}
		return fmt.Errorf("mount bpffs at %s: %w", BPFFS, err)
	}
	return nil
}

// isBPFFS reports whether path is on a bpffs.
func isBPFFS(path string) (bool, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return false, err
	}
	return uint32(st.Type) == unix.BPF_FS_MAGIC, nil
}

// Lock is an exclusive flock on a pin root, held while pins are created,
// repaired or removed so that concurrent sbx processes neither load the
// programs twice nor see half a pin directory.
type Lock struct{ fd int }

// LockRoot creates root (on bpffs) if needed and locks it.
func LockRoot(root string) (*Lock, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("create pin root: %w", err)
	}
	ok, err := isBPFFS(root)
	if err != nil {
		return nil, fmt.Errorf("statfs pin root %s: %w", root, err)
	}
	if !ok {
		return nil, fmt.Errorf("pin root %s is not on bpffs (call pin.Mount)", root)
	}
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open pin root: %w", err)
	}
	for {
		err = unix.Flock(fd, unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("lock pin root %s: %w", root, err)
	}
	return &Lock{fd}, nil
}

// Unlock releases the lock.
func (l *Lock) Unlock() { unix.Close(l.fd) }

// RemoveDir removes a pin directory and every pin in it, subdirectories
// included. Removing a link's pin detaches it once no process holds the
// link open.
func RemoveDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove pins: %w", err)
	}
	return nil
}

// Use is a shared flock on a pin directory, held by a handle (a Net or
// an LSM) for as long as it uses the directory's pins and event rings.
// Loading a build's pins removes other builds' directories only when
// nobody holds them ([RemoveUnused]), so a run of one sbx build never loses
// its pin directory to a run of another (an upgrade, two builds side by
// side).
type Use struct{ fd int }

// Hold takes a shared lock on dir. It fails wrapping [os.ErrNotExist]
// when dir is missing, or was removed while the lock was awaited (a remover
// holds it exclusively while it removes).
func Hold(dir string) (*Use, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open pin dir %s: %w", dir, err)
	}
	for {
		err = unix.Flock(fd, unix.LOCK_SH)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("lock pin dir %s: %w", dir, err)
	}
	var held, now unix.Stat_t
	if err := unix.Fstat(fd, &held); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("stat pin dir %s: %w", dir, err)
	}
	if err := unix.Stat(dir, &now); err != nil || now.Ino != held.Ino || now.Dev != held.Dev {
		unix.Close(fd)
		return nil, fmt.Errorf("pin dir %s: removed while opening: %w", dir, os.ErrNotExist)
	}
	return &Use{fd}, nil
}

// Release drops the lock; nil and repeated calls are fine.
func (u *Use) Release() {
	if u != nil && u.fd >= 0 {
		unix.Close(u.fd)
		u.fd = -1
	}
}

// RemoveUnused removes the pin directory dir unless a handle holds it
// ([Hold]), and reports whether dir is gone. Called under the pin lock.
func RemoveUnused(dir string) (bool, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("open pin dir %s: %w", dir, err)
	}
	defer unix.Close(fd)
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return false, nil
		}
		return false, fmt.Errorf("lock pin dir %s: %w", dir, err)
	}
	return true, RemoveDir(dir)
}

// RemoveOthers removes, of the pin directories in pinRoot whose names
// start with prefix, those nobody holds, except keep (a base name; "" for
// none). Called under the pin lock.
func RemoveOthers(pinRoot, prefix, keep string) error {
	entries, err := os.ReadDir(pinRoot)
	if err != nil {
		return fmt.Errorf("list pins: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) || e.Name() == keep {
			continue
		}
		if _, err := RemoveUnused(filepath.Join(pinRoot, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// HasOthers reports whether pinRoot holds a pin directory named prefix*
// other than keep: left by another build, or by one whose runs still use
// it. Cheap enough for every warm open (one read of a small directory).
func HasOthers(pinRoot, prefix, keep string) bool {
	entries, err := os.ReadDir(pinRoot)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), prefix) && e.Name() != keep {
			return true
		}
	}
	return false
}

// SweepOthers removes the unused pin directories named prefix* but keep,
// when there are any, taking the pin lock for it. It is garbage
// collection: a failure leaves them for a later run and is not reported.
func SweepOthers(pinRoot, prefix, keep string) {
	if !HasOthers(pinRoot, prefix, keep) {
		return
	}
	lock, err := LockRoot(pinRoot)
	if err != nil {
		return
	}
	defer lock.Unlock()
	_ = RemoveOthers(pinRoot, prefix, keep)
}
