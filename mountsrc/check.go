// Package mountsrc checks a sandbox's mounts against the files sbx held
// for them: once the mounts are in place and before the program starts,
// each path, looked up inside the root of the sandbox's PID 1 without
// following a symlink at any component, must be the file (dev/ino) sbx
// recorded, or the run ends.
package mountsrc

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/sbx-sandbox/sbx/hostfs"
	"golang.org/x/sys/unix"
)

// ErrReplaced is wrapped by the error of a run whose mount sources were
// replaced between sbx's checks and the sandbox's setup.
var ErrReplaced = errors.New("replaced while the sandbox was set up")

// OpenRoot opens the root of process pid (a sandbox's PID 1) with O_PATH.
func OpenRoot(pid int) (*os.File, error) {
	root, err := os.OpenFile("/proc/"+strconv.Itoa(pid)+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("check the sandbox's mounts: %w", err)
	}
	return root, nil
}

// Expected is a path inside a sandbox and the file it must be.
type Expected struct {
	Path string
	ID   hostfs.FileID
}

// CheckInRoot checks each path of want inside the root of process pid,
// without following a symlink at any component (see hostfs.IDInRoot): a
// path that is missing, a symlink, or another file fails with
// [ErrReplaced].
func CheckInRoot(pid int, want []Expected) error {
	root, err := OpenRoot(pid)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, w := range want {
		// Missing, a symlink (ELOOP) or another file: all are a swap.
		if id, err := hostfs.IDInRoot(root, w.Path); err != nil || id != w.ID {
			return fmt.Errorf("%s in the sandbox is not what sbx found there (%w); not running", w.Path, ErrReplaced)
		}
	}
	return nil
}
