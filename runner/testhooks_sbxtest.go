//go:build sbxtest

package runner

import (
	"os"
	"slices"
	"strings"

	"github.com/sbx-sandbox/sbx/egress"
	"github.com/sbx-sandbox/sbx/sandbox"
)

// TestHostsEnv names a hosts file (lines "ADDRESS NAME...") that a test
// build (tag sbxtest) of sbx gives its egress proxy instead of DNS, so that
// tests never resolve real names.
const TestHostsEnv = "SBX_TEST_HOSTS"

// testResolver returns the resolver of $SBX_TEST_HOSTS, or nil when unset.
func testResolver() egress.Resolver {
	path := os.Getenv(TestHostsEnv)
	if path == "" {
		return nil
	}
	return hostsResolver(path)
}

// skipMountCheck reports whether $SBX_TEST_SABOTAGE names "mountcheck":
// the run then skips the check of its mounts after the setup, so a test
// can show the race that the check closes.
func skipMountCheck() bool {
	return slices.Contains(strings.Split(os.Getenv(sandbox.SabotageEnv), ","), "mountcheck")
}
