package lsm

import (
	"os"
	"testing"
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
		t.Skip("BPF LSM tests need root")
	}
	if err := Supported(); err != nil {
		if os.Getenv("SBX_VMTEST") != "" {
			t.Fatalf("BPF LSM must work inside make vmtest: %v", err)
		}
		t.Skipf("BPF LSM unavailable here (run make vmtest): %v", err)
	}
}
