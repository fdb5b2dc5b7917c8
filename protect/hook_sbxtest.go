//go:build sbxtest

package protect

import (
	"os"
	"strings"
)

// TestProtectSwapEnv ("PATH=TARGET") makes a test build (tag sbxtest)
// replace PATH with a symlink to TARGET right after the walk for protected
// entries, as the program of another run on the same tree could: the
// race that Protection.verify closes.
const TestProtectSwapEnv = "SBX_TEST_PROTECT_SWAP"

// afterProtectWalk does the swap of $SBX_TEST_PROTECT_SWAP, if set; PATH
// is kept as PATH.sbx-swapped.
func afterProtectWalk() {
	path, target, ok := strings.Cut(os.Getenv(TestProtectSwapEnv), "=")
	if !ok {
		return
	}
	if err := os.Rename(path, path+".sbx-swapped"); err != nil {
		panic(err)
	}
	if err := os.Symlink(target, path); err != nil {
		panic(err)
	}
}
