package sandbox

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/canary"
)

// pipePair returns a pipe whose ends are closed at cleanup.
func pipePair(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// TestAwaitReleaseSbxGone: the shim says it runs on the ready pipe, and if
// sbx goes away instead of sending the go-ahead, it refuses (125) without
// starting anything.
func TestAwaitReleaseSbxGone(t *testing.T) {
	readyR, readyW := pipePair(t)
	lifeR, lifeW := pipePair(t)
	lifeW.Close()                              // sbx gone
	readyFD, err := unix.Dup(int(readyW.Fd())) // awaitRelease closes it
	if err != nil {
		t.Fatal(err)
	}
	if code := awaitRelease(readyFD, int(lifeR.Fd())); code != 125 {
		t.Errorf("awaitRelease with sbx gone: %d, want 125", code)
	}
	readyW.Close()
	var b [2]byte
	if n, _ := readyR.Read(b[:]); n != 1 {
		t.Errorf("the shim wrote %d bytes on the ready pipe, want 1", n)
	}
}

// TestLSMCanaryFailsOutsideSandbox: where no BPF LSM entry confines this
// process, the canary's open succeeds, and the canary must say the tier is
// not enforced (the shim then refuses to run: fail closed).
func TestLSMCanaryFailsOutsideSandbox(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	err = canary.LSM(exe)
	if err == nil || !strings.Contains(err.Error(), "not enforced") {
		t.Errorf("LSMCanary(%s) outside any sandbox: %v, want the tier reported as not enforced", exe, err)
	}
}
