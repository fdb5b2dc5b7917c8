package cgroup2

import (
	"errors"
	"fmt"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/sbxtest"
)

// TestMount: the mount found is a cgroup2 filesystem, and RootOf finds it
// for a path below it and refuses one outside every cgroup2 mount.
func TestMount(t *testing.T) {
	m, err := Mount()
	if errors.Is(err, ErrNoMount) {
		sbxtest.Skip(t, sbxtest.Cgroup2, fmt.Sprintf("this host has no cgroup2 mount: %v", err))
	}
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(m, &st); err != nil || st.Type != unix.CGROUP2_SUPER_MAGIC {
		t.Fatalf("%s: statfs %v, type %#x; want cgroup2", m, err, st.Type)
	}
	if r, err := RootOf(m + "/sbx/x"); err != nil || r != m {
		t.Errorf("RootOf below %s: %q, %v", m, r, err)
	}
	if _, err := RootOf("/usr"); !errors.Is(err, ErrNoMount) {
		t.Errorf("RootOf(/usr): %v, want ErrNoMount", err)
	}
}
