//go:build !sbxtest

package protect

// afterProtectWalk does nothing outside test builds (see
// protect_hook_sbxtest.go).
func afterProtectWalk() {}
