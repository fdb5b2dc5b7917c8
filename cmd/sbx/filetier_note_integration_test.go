package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/hostcheck"
	"github.com/sbx-sandbox/sbx/runner"
)

// TestFileTierNoteOnce: a root run on a host without the BPF LSM tier
// (this CI host refuses its programs) runs with Landlock alone and says
// so in one stderr line, once: the next run is quiet. On a host with the
// tier no run says it. Serial: it forgets the note the suite's first run
// said, which a parallel test would otherwise see said again.
func TestFileTierNoteOnce(t *testing.T) {
	if rootless() {
		t.Skip("rootless runs have no BPF LSM tier to miss")
	}
	b := newSerialBox(t)
	const note = "sbx: note: the BPF LSM file tier is unavailable here"
	host := hostcheck.Probe(hostcheck.Options{StateDir: runner.DefaultStateDir})
	missing := host.BPFLSM.Err != nil
	if err := os.Remove(filepath.Join(runner.DefaultStateDir, "file-tier-note")); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	first := b.run("--", "true")
	second := b.run("--", "true")
	landlockOnly := b.run("--policy", "landlock", "--", "true")
	for _, r := range []result{first, second, landlockOnly} {
		if r.code != 0 {
			t.Fatalf("run failed: %v", r)
		}
	}
	if !missing {
		if strings.Contains(first.stderr, note) {
			t.Errorf("BPF LSM available, yet the note: %q", first.stderr)
		}
		return
	}
	if n := strings.Count(first.stderr, note); n != 1 || strings.Count(first.stderr, "\n") != 1 || !strings.Contains(first.stderr, "Landlock alone") {
		t.Errorf("first run: want the note once, in one line, got %q", first.stderr)
	}
	if second.stderr != "" {
		t.Errorf("second run: want nothing on stderr, got %q", second.stderr)
	}
	if landlockOnly.stderr != "" {
		t.Errorf("--policy landlock chose Landlock alone: want no note, got %q", landlockOnly.stderr)
	}
}
