package lsm

import (
	"fmt"
	"os"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/sbxtest"
)

// requireLSM skips the test, with the reason, when this host cannot run BPF
// LSM programs. Inside make vmtest (SBX_VMTEST=1) the kernel must support
// them, so it fails instead.
func requireLSM(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("SBX_VMTEST") != "" {
			t.Fatal("make vmtest runs the tests as root, but euid is not 0")
		}
		sbxtest.Skip(t, sbxtest.Root, "BPF LSM tests need root")
	}
	if err := Supported(); err != nil {
		if os.Getenv("SBX_VMTEST") != "" {
			t.Fatalf("BPF LSM must work inside make vmtest: %v", err)
		}
		sbxtest.Skip(t, sbxtest.BPFLSM, fmt.Sprintf("BPF LSM unavailable here (run make vmtest): %v", err))
	}
}
