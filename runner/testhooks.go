//go:build !sbxtest

package runner

// skipMountCheck is false outside test builds: every run checks its
// mounts (see verifyMounts).
func skipMountCheck() bool { return false }
