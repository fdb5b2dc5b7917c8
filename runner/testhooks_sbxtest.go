//go:build sbxtest

package runner

import (
	"os"
	"slices"
	"strings"

	"github.com/sbx-sandbox/sbx/sandbox"
)

// skipMountCheck reports whether $SBX_TEST_SABOTAGE names "mountcheck":
// the run then skips the check of its mounts after the setup, so a test
// can show the race that the check closes.
func skipMountCheck() bool {
	return slices.Contains(strings.Split(os.Getenv(sandbox.SabotageEnv), ","), "mountcheck")
}
