//go:build !sbxtest

package runner

// afterProtectWalk does nothing outside test builds (see
// protect_hook_sbxtest.go).
func afterProtectWalk() {}
