package hostcheck

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestProbeLandlock: the probe's Landlock ABI is the kernel's.
func TestProbeLandlock(t *testing.T) {
	h := Probe(Options{})
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, 1) // LANDLOCK_CREATE_RULESET_VERSION
	if errno != 0 {
		if h.Landlock.Err == nil {
			t.Fatalf("kernel has no Landlock (%v), probe says ABI %d", errno, h.LandlockABI)
		}
		return
	}
	if h.Landlock.Err != nil || h.LandlockABI != int(abi) {
		t.Errorf("probe: ABI %d, %v; kernel: ABI %d", h.LandlockABI, h.Landlock.Err, abi)
	}
	if h.EUID != os.Geteuid() {
		t.Errorf("euid %d", h.EUID)
	}
}

// TestProbeQuickLeavesRest: a run's quick probe leaves what using it
// proves unprobed, so Decide does not refuse on it.
func TestProbeQuickLeavesRest(t *testing.T) {
	h := Probe(Options{})
	if h.CgroupBPF.Probed || h.Tracer.Probed || h.UserNS.Probed || h.Cgroup2.Probed {
		t.Errorf("quick probe probed more than a run decides from: %+v", h)
	}
}

// TestCachedLSMProbe: the BPF LSM verdict is probed once per boot and
// read back after, failures included.
func TestCachedLSMProbe(t *testing.T) {
	saved := lsmProbe
	defer func() { lsmProbe = saved }()
	calls := 0
	lsmProbe = func() error { calls++; return errors.New("refused at load") }
	dir := t.TempDir()
	for i := 0; i < 2; i++ {
		if err := cachedLSMProbe(dir); err == nil || err.Error() != "refused at load" {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if calls != 1 {
		t.Errorf("probed %d times, want once", calls)
	}
	if _, err := os.Stat(filepath.Join(dir, "lsm-probe")); err != nil {
		t.Error(err)
	}
}
