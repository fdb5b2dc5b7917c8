package bpf

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Cgroup2Mount returns where the cgroup2 hierarchy is mounted: /sys/fs/cgroup
// on cgroup2-only hosts, /sys/fs/cgroup/unified on hybrid ones. It prefers
// /sys/fs/cgroup, then the first cgroup2 mount in /proc/self/mountinfo. The
// error wraps [ErrNotSupported] when there is none.
func Cgroup2Mount() (string, error) {
	mounts, err := cgroup2Mounts()
	if err != nil {
		return "", err
	}
	if len(mounts) == 0 {
		return "", fmt.Errorf("find cgroup2 mount: none in /proc/self/mountinfo: %w", ErrNotSupported)
	}
	for _, m := range mounts {
		if m == "/sys/fs/cgroup" {
			return m, nil
		}
	}
	return mounts[0], nil
}

// cgroup2Mounts lists the mount points of type cgroup2.
func cgroup2Mounts() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("find cgroup2 mount: %w", err)
	}
	defer f.Close()
	var mounts []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		fields := strings.Fields(sc.Text())
		for i, fld := range fields {
			if fld == "-" && i+1 < len(fields) && i >= 5 {
				if fields[i+1] == "cgroup2" {
					mounts = append(mounts, UnescapeMountinfo(fields[4]))
				}
				break
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("find cgroup2 mount: read mountinfo: %w", err)
	}
	return mounts, nil
}

// UnescapeMountinfo undoes the octal escapes of a path in mountinfo(5)
// (\040 for a space, \134 for a backslash).
func UnescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			ok := true
			for j := 1; j <= 3; j++ {
				c := s[i+j]
				if c < '0' || c > '7' {
					ok = false
					break
				}
				v = v*8 + (c - '0')
			}
			if ok {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// cgroup2RootOf returns the cgroup2 mount point that contains path.
func cgroup2RootOf(path string) (string, error) {
	mounts, err := cgroup2Mounts()
	if err != nil {
		return "", err
	}
	best := ""
	for _, m := range mounts {
		if (path == m || strings.HasPrefix(path, strings.TrimSuffix(m, "/")+"/")) && len(m) > len(best) {
			best = m
		}
	}
	if best == "" {
		return "", fmt.Errorf("%s is not under a cgroup2 mount: %w", path, ErrNotSupported)
	}
	return best, nil
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

// cleanAbs makes path absolute and clean, for comparing with mount points.
func cleanAbs(path string) (string, error) {
	p, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	return filepath.Clean(p), nil
}
