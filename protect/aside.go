package protect

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/sbx-sandbox/sbx/hostfs"
	"golang.org/x/sys/unix"
)

// BlockedSuffix is put, with the run's id, after the name of a protected
// entry that a run created (see MoveAside).
const BlockedSuffix = ".sbx-blocked-"

// MoveAside renames the protected entry p (one of Mounts.Created) to
// NAME.sbx-blocked-ID in its own directory (for .github/workflows, the
// last component within .github), where nothing runs it: the parent is
// opened without following a symlink at any component, and the entry is
// renamed inside it without following it (a symlink is moved itself) and
// without replacing anything. It returns the new path. Call it with the
// invoking user's rights.
func MoveAside(p, id string) (string, error) {
	dir, name := filepath.Dir(p), filepath.Base(p)
	d, err := hostfs.OpenPath(dir, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return "", fmt.Errorf("move %s aside: %w", p, err)
	}
	defer d.Close()
	newName := name + BlockedSuffix + id
	fd := int(d.Fd())
	if err := unix.Renameat2(fd, name, fd, newName, unix.RENAME_NOREPLACE); err != nil {
		return "", fmt.Errorf("move %s aside: %w", p, &os.LinkError{Op: "rename", Old: p, New: filepath.Join(dir, newName), Err: err})
	}
	return filepath.Join(dir, newName), nil
}
