package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/internal/cgroup2"
	"github.com/sbx-sandbox/sbx/internal/runid"
	"github.com/sbx-sandbox/sbx/sandbox"
)

// TestRunCgroupInWallGroup: a root run's cgroup lies in the wall group of
// this sbx build (sbx/<netwall.WallID>/<id>, the cgroup its network wall is
// attached to, so that another build's wall never sees it), in the cgroup2
// hierarchy and in every v1 one; nothing of it is left after the run; and
// the run's wall open removes the wall group of another build that no
// pins name any more (its last run ended), but not one with a run cgroup
// in it.
func TestRunCgroupInWallGroup(t *testing.T) {
	if rootless() {
		t.Skip("root runs only: a rootless run has no network wall (its cgroup is the user's delegated one)")
	}
	needRootTier(t, "bpf-wall")
	// First: newBox pauses a parallel test until the serial ones are
	// done, and the fixtures below must not wait that long (any sbx's
	// sweep may take what looks stale by then).
	b := newBox(t)
	mnt, err := cgroup2.Mount()
	if err != nil {
		t.Fatal(err)
	}
	parent := filepath.Join(mnt, sandbox.CgroupParent)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	mkdir := func(p string) string {
		t.Helper()
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Remove(p) })
		return p
	}
	unused := mkdir(filepath.Join(parent, uniqueName(t, sandbox.WallGroupPrefix+"unused")))
	busy := mkdir(filepath.Join(parent, uniqueName(t, sandbox.WallGroupPrefix+"busy")))
	// A run id of its own: a fixed one could be another test's, whose
	// teardown removes that id's cgroups in every wall group.
	busyID, err := runid.New()
	if err != nil {
		t.Fatal(err)
	}
	busyRun := mkdir(filepath.Join(busy, busyID))
	// A live process in it, as a run has (an empty run cgroup is any
	// sweep's to remove).
	sleeper0 := exec.Command("sleep", "60")
	if err := sleeper0.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper0.Process.Kill(); _ = sleeper0.Wait() })
	if err := os.WriteFile(filepath.Join(busyRun, "cgroup.procs"), []byte(strconv.Itoa(sleeper0.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}

	p := b.start(opts{}, "run", "--net", "none", "--timeout", "5s", "--", "sh", "-c", "echo ready; exec sleep 30")
	p.waitLine("ready")
	ids, err := runs.ids(p.cmd.Process.Pid, p.start, 5*time.Second)
	if err != nil || len(ids) != 1 {
		p.signal(9)
		p.wait()
		t.Fatalf("sandbox id of the run: %v %v", ids, err)
	}
	id := ids[0]
	sleeper := descendant(p.cmd.Process.Pid, "sleep", 5*time.Second)
	if sleeper == 0 {
		p.signal(9)
		p.wait()
		t.Fatal("the sandboxed sleep never showed up")
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(sleeper) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	want := "/" + rootCgroup(id)
	if !strings.HasPrefix(want, "/sbx/net-") {
		t.Fatalf("rootCgroup(%s) = %s: not in a wall group", id, want)
	}
	var unified bool
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			t.Fatalf("/proc/%d/cgroup line %q", sleeper, line)
		}
		unified = unified || parts[0] == "0"
		if parts[0] == "0" || strings.Contains(","+parts[1]+",", ",memory,") || strings.Contains(","+parts[1]+",", ",pids,") {
			if parts[2] != want {
				t.Errorf("the program's cgroup (%s): %s, want %s", line, parts[2], want)
			}
		}
	}
	if !unified {
		t.Errorf("the program has no cgroup2 cgroup:\n%s", data)
	}
	if _, err := os.Stat(unused); !os.IsNotExist(err) {
		t.Errorf("%s: the unused wall group of another build was kept (%v)", unused, err)
	}
	if _, err := os.Stat(busyRun); err != nil {
		t.Errorf("%s: a wall group with a run cgroup in it was removed: %v", busy, err)
	}
	if r := p.wait(); r.code != 124 {
		t.Errorf("--timeout 5s: want 124\n%v", r)
	}
	assertNoLeftovers(t, id)
	if _, err := os.Stat(filepath.Join(mnt, filepath.Dir(rootCgroup(id)))); err != nil {
		t.Errorf("this build's wall group after its run: %v (its wall stays pinned, and attached there)", err)
	}
}
