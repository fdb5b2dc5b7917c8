package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/sbx-sandbox/sbx/internal/cgroup2"

	"golang.org/x/sys/unix"
)

// Cgroup2RootOf returns the cgroup2 mount point that contains path.
func Cgroup2RootOf(path string) (string, error) {
	r, err := cgroup2.RootOf(path)
	if errors.Is(err, cgroup2.ErrNoMount) {
		err = fmt.Errorf("%w: %w", err, ErrNotSupported)
	}
	return r, err
}

// CgroupID returns the id of the cgroup2 directory at path: the value
// bpf_get_current_cgroup_id() returns for its tasks, and the key of the
// per-run maps. It fails if path is not a cgroup2 directory.
func CgroupID(path string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, fmt.Errorf("cgroup id of %s: %w", path, err)
	}
	if st.Type != unix.CGROUP2_SUPER_MAGIC {
		return 0, fmt.Errorf("cgroup id of %s: not a cgroup2 directory", path)
	}
	// cgroupfs (kernfs) file handles are the 64-bit node id, which is the
	// cgroup id.
	h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, path, 0)
	if err != nil {
		return 0, fmt.Errorf("cgroup id of %s: name_to_handle_at: %w", path, err)
	}
	b := h.Bytes()
	if len(b) != 8 {
		return 0, fmt.Errorf("cgroup id of %s: unexpected %d-byte file handle", path, len(b))
	}
	return binary.NativeEndian.Uint64(b), nil
}

// CleanAbs makes path absolute and clean, for comparing with mount points.
func CleanAbs(path string) (string, error) {
	p, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	return filepath.Clean(p), nil
}
