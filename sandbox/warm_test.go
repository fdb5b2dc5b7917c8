package sandbox

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/internal/sbxtest"
)

// TestWarmCgroupAttach checks that the warm-up names the cgroup2 cgroup this
// process is really in and that writing to it moves nothing.
func TestWarmCgroupAttach(t *testing.T) {
	if os.Geteuid() != 0 {
		sbxtest.Skip(t, sbxtest.Root, "needs root: writes cgroup.procs")
	}
	procs, ok := ownCgroupProcs()
	if !ok {
		sbxtest.Skip(t, sbxtest.Cgroup2, "no cgroup2 hierarchy mounted")
	}
	data, err := os.ReadFile(procs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(strings.Fields(string(data)), strconv.Itoa(os.Getpid())) {
		t.Fatalf("%s does not list this process (%d)", procs, os.Getpid())
	}
	before, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	warmCgroupAttach()
	time.Sleep(50 * time.Millisecond) // the write runs in the background
	after, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Errorf("cgroups changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}
