package bpf

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// BPFFS is where bpffs is mounted ([Mount]).
const BPFFS = "/sys/fs/bpf"

// DefaultPinRoot is the bpffs directory under which sbx pins its objects,
// one subdirectory per program version and parent cgroup.
const DefaultPinRoot = BPFFS + "/sbx"

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
			err = fmt.Errorf("%w: %w", ErrNotSupported, err)
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

// pinLock is an exclusive flock on a pin root, held while pins are created,
// repaired or removed so that concurrent sbx processes neither load the
// programs twice nor see half a pin directory.
type pinLock struct{ fd int }

// lockPinRoot creates root (on bpffs) if needed and locks it.
func lockPinRoot(root string) (*pinLock, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("create pin root: %w", err)
	}
	ok, err := isBPFFS(root)
	if err != nil {
		return nil, fmt.Errorf("statfs pin root %s: %w", root, err)
	}
	if !ok {
		return nil, fmt.Errorf("pin root %s is not on bpffs (call bpf.Mount)", root)
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
	return &pinLock{fd}, nil
}

func (l *pinLock) unlock() { unix.Close(l.fd) }

// removePinDir removes a pin directory and every pin in it, subdirectories
// included. Removing a link's pin detaches it once no process holds the
// link open.
func removePinDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove pins: %w", err)
	}
	return nil
}
