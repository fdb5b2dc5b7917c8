package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"github.com/sbx-sandbox/sbx/hostfs"
)

// invoker is the identity the files a user names on sbx's command line
// (--violations, --settings, --request) and the user's config are opened
// with: under sudo, SUDO_UID's and SUDO_GID's (with the passwd entry's
// groups), else sbx's own. Root must never open them with its own rights:
// a path in the workspace is the sandbox's to replace.
func invoker() hostfs.Cred {
	if os.Getuid() != 0 {
		return hostfs.Cred{UID: os.Getuid(), GID: os.Getgid()}
	}
	uid, err := strconv.Atoi(os.Getenv("SUDO_UID"))
	if err != nil {
		return hostfs.Cred{UID: 0, GID: 0}
	}
	gid, err := strconv.Atoi(os.Getenv("SUDO_GID"))
	if err != nil {
		gid = uid
	}
	return hostfs.LookupCred(uid, gid)
}

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
