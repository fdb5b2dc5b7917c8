package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/internal/cgroup2"
)

// TestSweepCgroups: an empty sandbox cgroup older than a minute with no run
// is removed, directly under the sbx parent (the layout before wall groups)
// and in a wall group (any build's); a young one, and an old one with a
// process, stay; and so does a wall group itself, even empty and old (the
// network wall removes it with its build's pins).
func TestSweepCgroups(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("creates cgroups")
	}
	parent := filepath.Join("/sys/fs/cgroup/unified", CgroupParent)
	if !isDir(parent) {
		parent = filepath.Join("/sys/fs/cgroup", CgroupParent)
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Skipf("no cgroup2 sandbox parent: %v", err)
	}
	group := filepath.Join(parent, WallGroupPrefix+"5ca1ab1e5ca1ab1e")
	if err := os.Mkdir(group, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(group) })
	// A wall group with no run in it: its one child is not a run's
	// cgroup, which keeps the network wall of a concurrent sbx run from
	// removing it as another build's unused group (netwall) while this
	// test looks; the sweep must leave it alone either way.
	emptyGroup := filepath.Join(parent, WallGroupPrefix+"5ca1ab1e5ca1ab1f")
	if err := os.Mkdir(emptyGroup, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(emptyGroup) })
	keep := filepath.Join(emptyGroup, "keep")
	if err := os.Mkdir(keep, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(keep) })
	mk := func(id string, age time.Duration) string {
		d := filepath.Join(parent, filepath.FromSlash(id))
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = killAndRemove(d) })
		old := time.Now().Add(-age)
		if err := os.Chtimes(d, old, old); err != nil {
			t.Fatal(err)
		}
		return d
	}
	stale := mk("5ca1ab1e00000001", 2*time.Minute)
	young := mk("5ca1ab1e00000002", 0)
	busy := mk("5ca1ab1e00000003", 2*time.Minute)
	groupStale := mk(filepath.Base(group)+"/5ca1ab1e00000004", 2*time.Minute)
	groupYoung := mk(filepath.Base(group)+"/5ca1ab1e00000005", 0)
	for _, g := range []string{group, emptyGroup} {
		old := time.Now().Add(-2 * time.Minute)
		if err := os.Chtimes(g, old, old); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if err := os.WriteFile(filepath.Join(busy, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Minute)
	_ = os.Chtimes(busy, old, old)
	sweepCgroups()
	if isDir(stale) || isDir(groupStale) {
		t.Errorf("an empty, stale sandbox cgroup was kept: directly %v, in a wall group %v", isDir(stale), isDir(groupStale))
	}
	if !isDir(young) || !isDir(busy) || !isDir(groupYoung) {
		t.Errorf("a young or busy cgroup was removed: young %v busy %v young in a wall group %v", isDir(young), isDir(busy), isDir(groupYoung))
	}
	if !isDir(group) || !isDir(emptyGroup) || !isDir(keep) {
		t.Errorf("a wall group was removed: %v, the one without runs %v (its child %v)", isDir(group), isDir(emptyGroup), isDir(keep))
	}
}

// TestSweepV1WallGroups: on a hybrid host, the copy of a wall group in a
// cgroup v1 hierarchy goes once its cgroup2 wall group is gone (and is
// empty); while the cgroup2 one is there, it stays.
func TestSweepV1WallGroups(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("creates cgroups")
	}
	mnt, err := cgroup2.Mount()
	if err != nil || mnt == "/sys/fs/cgroup" {
		t.Skipf("not a hybrid host (cgroup2 at %q, %v): no v1 hierarchies", mnt, err)
	}
	v1 := filepath.Join("/sys/fs/cgroup", "pids", CgroupParent)
	if err := os.MkdirAll(v1, 0o755); err != nil {
		t.Skipf("no pids v1 hierarchy: %v", err)
	}
	mk := func(p string) string {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Remove(p) })
		return p
	}
	orphan := mk(filepath.Join(v1, WallGroupPrefix+"5ca1ab1e000000a1"))
	live := WallGroupPrefix + "5ca1ab1e000000a2"
	mk(filepath.Join(mnt, CgroupParent, live))
	kept := mk(filepath.Join(v1, live))
	sweepV1WallGroups()
	if isDir(orphan) {
		t.Error("a v1 copy of a wall group with no cgroup2 wall group was kept")
	}
	if !isDir(kept) {
		t.Error("a v1 copy of a live wall group was removed")
	}
}
