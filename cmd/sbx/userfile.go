package main

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/sbx-sandbox/sbx/hostfs"
)

// openUserFile opens path, a file the user named, with c's rights: the
// last component is never followed (a symlink the sandbox planted there by
// an earlier run fails with ELOOP), the open never blocks (a FIFO), and
// only a regular file is returned.
func openUserFile(c hostfs.Cred, path string, flags int, perm os.FileMode) (*os.File, error) {
	var f *os.File
	err := c.Do(func() error {
		var err error
		f, err = os.OpenFile(path, flags|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, perm)
		return err
	})
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%w (a symlink is not followed)", err)
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("open %s: not a regular file", path)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
