// Package lockfile is sbx's one way to use flock(2) lock files in its state
// dirs: a record that says "this run is alive" for exactly as long as the
// process that holds it lives. The kernel drops a flock when the last file
// descriptor of its open file description closes, which happens when the
// process dies, however it dies (SIGKILL included), and before it is
// reaped. So a lock that can be taken means the owner is gone, and one that
// is held means it lives.
//
// Locks are exclusive and never waited for: a held lock is an answer, not
// something to queue behind.
package lockfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// TryLock takes an exclusive lock on f without waiting. held reports that
// another open file holds the lock (err is nil then); any other failure is
// err. The lock lasts until f (and every duplicate of its descriptor) is
// closed.
func TryLock(f *os.File) (held bool, err error) {
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, unix.EWOULDBLOCK):
		return true, nil
	}
	return false, fmt.Errorf("lock %s: %w", f.Name(), os.NewSyscallError("flock", err))
}

// TryOpen opens the existing lock file path and locks it without waiting:
// f is the locked file (close it to let go), or nil with held set when
// another open file holds the lock. A missing file gives (nil, false, nil).
func TryOpen(path string) (f *os.File, held bool, err error) {
	f, err = os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("open lock %s: %w", path, err)
	}
	if held, err = TryLock(f); held || err != nil {
		f.Close()
		return nil, held, err
	}
	return f, false, nil
}

// Publish creates the lock file path holding data, already locked: the
// file is written and locked under a temporary name in path's directory
// and then hard-linked into place, so that nobody ever sees path unlocked
// or half-written while its owner lives. An existing path is an error that
// wraps os.ErrExist. The caller keeps the returned file open for as long
// as the lock should hold.
func Publish(path string, data []byte) (*os.File, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("create lock file: %w", err)
	}
	defer os.Remove(f.Name())
	held, err := TryLock(f)
	if err == nil && held {
		err = fmt.Errorf("lock %s: held by another open file", f.Name())
	}
	if err == nil && len(data) > 0 {
		_, err = f.Write(data)
	}
	if err == nil {
		err = os.Link(f.Name(), path)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
