package lsm

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/sbx-sandbox/sbx/bpf"
	"github.com/sbx-sandbox/sbx/bpf/events"
	"github.com/sbx-sandbox/sbx/bpf/internal/bpftest"
	"github.com/sbx-sandbox/sbx/bpf/pin"
	"github.com/sbx-sandbox/sbx/internal/cgroup2"
)

// TestLSMPinnedSharedEvents is the setup sbx uses: the LSM programs share
// the network wall's event maps ([netwall.Wall.EventMaps]), so one reader per run sees both tiers'
// denials, and are pinned, so a second Open reuses them (no load) and
// the programs outlive the handle that loaded them.
func TestLSMPinnedSharedEvents(t *testing.T) {
	requireLSM(t)
	mnt, err := cgroup2.Mount()
	if err != nil {
		t.Fatal(err)
	}
	run := bpftest.CgroupDir(t, filepath.Join(mnt, fmt.Sprintf("sbx-lsm-pin-%d", os.Getpid())))
	runID, err := bpf.CgroupID(run)
	if err != nil {
		t.Fatal(err)
	}
	pinRoot := lsmPinRoot(t)

	// The event maps of events.h, as the network wall creates them (the
	// wall itself is tested in package netwall).
	maps := netEventMaps(t)
	opts := &Options{Events: &maps, PinRoot: pinRoot}

	start := time.Now()
	first, err := Open(opts)
	if err != nil {
		t.Fatalf("Open (cold): %v", err)
	}
	cold := time.Since(start)
	if !first.Loaded() {
		t.Error("first Open reused pins that should not exist")
	}
	start = time.Now()
	second, err := Open(opts)
	if err != nil {
		t.Fatalf("Open (warm): %v", err)
	}
	warm := time.Since(start)
	t.Cleanup(func() {
		second.Unpin()
		second.Close()
	})
	if second.Loaded() {
		t.Error("second Open loaded the programs again instead of reusing the pins")
	}
	if second.PinDir() != first.PinDir() || filepath.Dir(second.PinDir()) != pinRoot {
		t.Errorf("pin dirs %q, %q; want one under %s", first.PinDir(), second.PinDir(), pinRoot)
	}
	t.Logf("Open cold %v, warm %v (TCG in make vmtest)", cold.Round(time.Millisecond), warm.Round(time.Millisecond))
	// The loading handle goes away; the pins keep the programs attached.
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	rd, err := events.NewReader(maps, runID)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var p FilePolicy
	p.Allow(filepath.Dir(exe), false)
	if err := second.AddSandbox(runID, p); err != nil {
		t.Fatal(err)
	}
	defer second.RemoveSandbox(runID)
	secret := writeFile(t, filepath.Join(t.TempDir(), "secret"), "s")

	got, pid := lsmHelper(t, run, nil, "open", secret, "r")
	if got != "EACCES" {
		t.Fatalf("open in the run = %q, want EACCES", got)
	}
	if got, _ := lsmHelper(t, "", nil, "open", secret, "r"); got != "ok" {
		t.Fatalf("open outside = %q, want ok", got)
	}
	e := &lsmEnv{events: rd, id: runID}
	ev := e.wantEvent(t, events.OpFileOpen, pid, pathIs(secret))
	t.Logf("event through the shared maps: %s", ev)
}

// netEventMaps creates the event maps of events.h (the network wall's,
// from this object's identical specs), closed at cleanup.
func netEventMaps(t *testing.T) events.Maps {
	t.Helper()
	spec, err := loadLsm()
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name string) *ebpf.Map {
		m, err := ebpf.NewMap(spec.Maps[name])
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	return events.Maps{Events: mk(lsmMapSbxEvents), Drops: mk(lsmMapSbxDrops), Unrouted: mk(lsmMapSbxUnrouted)}
}

// lsmPinRoot is a test-only pin root on bpffs, removed at cleanup.
func lsmPinRoot(t *testing.T) string {
	t.Helper()
	if err := pin.Mount(); err != nil {
		t.Fatal(err)
	}
	pinRoot := filepath.Join(pin.BPFFS, fmt.Sprintf("sbx-lsm-test-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "-")))
	t.Cleanup(func() {
		entries, _ := os.ReadDir(pinRoot)
		for _, e := range entries {
			if err := pin.RemoveDir(filepath.Join(pinRoot, e.Name())); err != nil {
				t.Errorf("remove pins: %v", err)
			}
		}
		os.Remove(pinRoot)
	})
	return pinRoot
}

// TestLSMPinnedOwnEvents: pinned programs with their own event maps; a
// second handle shares the pins, including the ring pool's slot directory.
func TestLSMPinnedOwnEvents(t *testing.T) {
	requireLSM(t)
	mnt, err := cgroup2.Mount()
	if err != nil {
		t.Fatal(err)
	}
	run := bpftest.CgroupDir(t, filepath.Join(mnt, fmt.Sprintf("sbx-lsm-own-%d", os.Getpid())))
	runID, err := bpf.CgroupID(run)
	if err != nil {
		t.Fatal(err)
	}
	opts := &Options{PinRoot: lsmPinRoot(t)}
	first, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		second.Unpin()
		second.Close()
	}()
	if !first.Loaded() || second.Loaded() {
		t.Errorf("Loaded() = %v, %v; want true, false", first.Loaded(), second.Loaded())
	}
	if got := second.EventMaps().SlotDir; got == "" || got != first.EventMaps().SlotDir {
		t.Errorf("slot dirs %q, %q; want the same pin directory", first.EventMaps().SlotDir, got)
	}
	rd, err := first.Events(runID)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var p FilePolicy
	p.Allow(filepath.Dir(exe), false)
	// Registered through the second handle, read through the first.
	if err := second.AddSandbox(runID, p); err != nil {
		t.Fatal(err)
	}
	defer first.RemoveSandbox(runID)
	got, pid := lsmHelper(t, run, nil, "socket", "10", "2")
	if got != "EPERM" {
		t.Fatalf("socket(AF_INET6) in the run = %q, want EPERM", got)
	}
	e := &lsmEnv{events: rd, id: runID}
	e.wantEvent(t, events.OpSocketCreate, pid, func(ev events.Event) bool { return ev.Family == 10 })
}

// TestLSMOtherVersionInUse: another build's LSM pins that a live handle
// still holds survive this build's load (their programs stay attached for
// that build's runs); the first open after the handle closes sweeps them.
func TestLSMOtherVersionInUse(t *testing.T) {
	requireLSM(t)
	opts := &Options{PinRoot: lsmPinRoot(t)}
	first, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	// Held by inode: renamed, it is another build's directory in use.
	stale := filepath.Join(opts.PinRoot, "lsm-0000000000000000-own")
	if err := os.Rename(first.PinDir(), stale); err != nil {
		t.Fatal(err)
	}
	second, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		second.Unpin()
		second.Close()
	}()
	if !second.Loaded() {
		t.Error("Open reused pins of another version")
	}
	if entries, err := os.ReadDir(stale); err != nil || len(entries) == 0 {
		t.Errorf("pins of the build in use were removed: %v (%d entries)", err, len(entries))
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	third, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	if third.Loaded() {
		t.Error("Open of this build did not reuse its pins")
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unused pins of the other build not swept: %v", err)
	}
}
