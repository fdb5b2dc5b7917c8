//go:build !sbxtest

package sandbox

import "github.com/opencontainers/runc/libcontainer/configs"

// sabotage weakens a sandbox on purpose in test builds (tag sbxtest), to
// prove that the canaries catch a protection that is not in place. In
// normal builds it does nothing.
func sabotage(*configs.Config, *ShimConfig) {}
