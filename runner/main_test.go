package runner

import (
	"os"
	"testing"

	"github.com/sbx-sandbox/sbx/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.Init() // the test binary is the sandbox's init and shim too
	os.Exit(m.Run())
}
