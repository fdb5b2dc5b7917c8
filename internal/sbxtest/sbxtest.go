// Package sbxtest holds what sbx's tests share: skips that cannot go
// stale. A test that needs a feature of the host (root, Landlock, a
// tool) skips with the reason where the feature is missing, but fails
// where the environment says it must be there: SBX_REQUIRE names the
// features this machine provides, as a comma list ("root,landlock") or
// "all". CI sets it (the Makefile's test target), so a skip that a broken
// probe or a lost package would cause there is a failure instead.
package sbxtest

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// Features that SBX_REQUIRE can name.
const (
	Root      = "root"      // the tests run as uid 0
	Landlock  = "landlock"  // the kernel has Landlock
	Userns    = "userns"    // unprivileged user namespaces
	CgroupBPF = "cgroupbpf" // cgroup BPF programs (the network wall)
	BPFLSM    = "bpflsm"    // the BPF LSM is enabled (lsm=...,bpf)
	Python3   = "python3"   // python3 on PATH
	Node      = "node"      // node at /usr/bin/node
	Cgroup2   = "cgroup2"   // a cgroup2 hierarchy is mounted
)

// EnvRequire is the variable naming the features that must be present.
const EnvRequire = "SBX_REQUIRE"

// Required reports whether SBX_REQUIRE names feature (or is "all").
func Required(feature string) bool {
	for _, f := range strings.Split(os.Getenv(EnvRequire), ",") {
		if f = strings.TrimSpace(f); f == "all" || f == feature {
			return true
		}
	}
	return false
}

// Skip skips t because feature is missing, with reason; when SBX_REQUIRE
// names feature, it fails t instead: the feature was promised.
func Skip(t testing.TB, feature, reason string) {
	t.Helper()
	if Required(feature) {
		t.Fatalf("%s (%s=%s requires %s)", reason, EnvRequire, os.Getenv(EnvRequire), feature)
	}
	t.Skip(reason)
}

// RequireRoot skips t unless it runs as root (see Skip).
func RequireRoot(t testing.TB, reason string) {
	t.Helper()
	if os.Geteuid() != 0 {
		Skip(t, Root, reason)
	}
}

// Known reports whether name is one of the features above, for a check of
// SBX_REQUIRE's spelling.
func Known(name string) bool {
	return name == "all" || slices.Contains([]string{Root, Landlock, Userns, CgroupBPF, BPFLSM, Python3, Node, Cgroup2}, name)
}
