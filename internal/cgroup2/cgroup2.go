// Package cgroup2 finds the host's cgroup2 hierarchy in the mount table
// (through moby/sys/mountinfo, which unescapes the paths), for the
// packages that attach to it (bpf) and create sandboxes in it (sandbox).
package cgroup2

import (
	"errors"
	"fmt"
	"strings"

	"github.com/moby/sys/mountinfo"
)

// ErrNoMount is wrapped by the errors of a host without a cgroup2 mount.
var ErrNoMount = errors.New("no cgroup2 mount")

// Mounts lists the mount points of type cgroup2, in mount table order.
func Mounts() ([]string, error) {
	ms, err := mountinfo.GetMounts(mountinfo.FSTypeFilter("cgroup2"))
	if err != nil {
		return nil, fmt.Errorf("find cgroup2 mount: %w", err)
	}
	var out []string
	for _, m := range ms {
		out = append(out, m.Mountpoint)
	}
	return out, nil
}

// Mount returns where the cgroup2 hierarchy is mounted: /sys/fs/cgroup on
// cgroup2-only hosts, /sys/fs/cgroup/unified on hybrid ones. It prefers
// /sys/fs/cgroup, then the first cgroup2 mount of the table. The error
// wraps [ErrNoMount] when there is none.
func Mount() (string, error) {
	mounts, err := Mounts()
	if err != nil {
		return "", err
	}
	if len(mounts) == 0 {
		return "", fmt.Errorf("find cgroup2 mount: none in /proc/self/mountinfo: %w (cgroup BPF needs a cgroup2 hierarchy; mount one with: mount -t cgroup2 none /sys/fs/cgroup/unified)", ErrNoMount)
	}
	for _, m := range mounts {
		if m == "/sys/fs/cgroup" {
			return m, nil
		}
	}
	return mounts[0], nil
}

// RootOf returns the cgroup2 mount point that contains path (clean,
// absolute): the longest one that is path or a parent of it. The error
// wraps [ErrNoMount] when there is none.
func RootOf(path string) (string, error) {
	mounts, err := Mounts()
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
		return "", fmt.Errorf("%s is not under a cgroup2 mount: %w", path, ErrNoMount)
	}
	return best, nil
}
