package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestSweepCgroups: an empty sandbox cgroup older than a minute with no run
// is removed; a young one, and an old one with a process, stay.
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
	mk := func(id string, age time.Duration) string {
		d := filepath.Join(parent, id)
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
	if isDir(stale) {
		t.Error("an empty, stale sandbox cgroup was kept")
	}
	if !isDir(young) || !isDir(busy) {
		t.Errorf("a young or busy cgroup was removed: young %v busy %v", isDir(young), isDir(busy))
	}
}
