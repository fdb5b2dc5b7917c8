//go:build sbxtest

package netsvc

import (
	"os"

	"github.com/sbx-sandbox/sbx/egress"
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
