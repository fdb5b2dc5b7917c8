package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/opencontainers/cgroups"
	"github.com/sbx-sandbox/sbx/internal/cgroup2"
)

// warmCgroupAttach makes the sandbox's cgroup attach cheaper by starting,
// in the background and right away, the wait that the attach would
// otherwise pay in full later.
//
// Moving a process into a cgroup (libcontainer writes the sandbox's PID to
// cgroup.procs of each hierarchy) takes the kernel's global threadgroup
// rwsem for writing. Unless cgroups are mounted with favordynmods, the
// first writer after an idle period waits for an RCU grace period (5-15 ms
// on the reference machine, a third of an `sbx run -- true`); writers that
// come while that grace period runs, or shortly after it, do not wait again.
// So sbx writes its own PID into the cgroup2 cgroup it is already in (a
// migration to where it is: the kernel takes the lock and moves nothing)
// from a goroutine while it prepares the sandbox, and the sandbox's attach
// finds the grace period elapsed or under way.
//
// It changes no cgroup membership and no kernel state beyond the lock's
// fast-path mode; every error is ignored (the attach then simply waits as
// before). [Create] calls it; it must not run before work that takes the
// cgroup lock (cgroup mkdir, BPF attach or query on a cgroup): the writer
// holds cgroup_mutex while it waits, so that work would wait instead.
func warmCgroupAttach() {
	procs, ok := ownCgroupProcs()
	if !ok {
		return
	}
	go func() {
		f, err := os.OpenFile(procs, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer f.Close()
		_, _ = f.WriteString(strconv.Itoa(os.Getpid()))
	}()
}

// ownCgroupProcs returns cgroup.procs of the cgroup2 cgroup this process is
// in (the "0::" line of /proc/self/cgroup), if cgroup2 is mounted.
func ownCgroupProcs() (string, bool) {
	self, err := cgroups.ParseCgroupFile("/proc/self/cgroup")
	if err != nil {
		return "", false
	}
	rel, found := self[""]
	if !found || !strings.HasPrefix(rel, "/") || strings.Contains(rel, "(deleted)") {
		return "", false
	}
	mnt, err := cgroup2.Mount()
	if err != nil {
		return "", false
	}
	return filepath.Join(mnt, filepath.Clean(rel), "cgroup.procs"), true
}
