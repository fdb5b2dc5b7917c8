//go:build !sbxtest

package runner

import "github.com/sbx-sandbox/sbx/egress"

// testResolver is nil outside test builds: the egress proxy resolves names
// with the system's resolver.
func testResolver() egress.Resolver { return nil }

// skipMountCheck is false outside test builds: every run checks its
// mounts (see verifyMounts).
func skipMountCheck() bool { return false }
