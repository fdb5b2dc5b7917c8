package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/sbxtest"
)

// dropHelperEnv runs TestDropBoundingSetHelper as the helper process.
const dropHelperEnv = "SBX_TEST_DROP_HELPER"

// TestDropBoundingSetHelper is not a test: run by TestDropBoundingSet as
// an ordinary user (a full bounding set and no CAP_SETPCAP), it tries
// dropBoundingSet with the nesting the environment names and prints the
// result.
func TestDropBoundingSetHelper(t *testing.T) {
	mode := os.Getenv(dropHelperEnv)
	if mode == "" {
		return // a helper only
	}
	if err := dropBoundingSet(mode == "nested"); err != nil {
		os.Stdout.WriteString("error: " + err.Error() + "\n")
	} else {
		os.Stdout.WriteString("ok\n")
	}
	os.Exit(0)
}

// TestDropBoundingSet: a process that cannot drop its bounding set (no
// CAP_SETPCAP) is an error for the exec step in the sandbox's namespace,
// and tolerated in a namespace of its own, where an LSM may refuse every
// capability; one that can drops it all.
func TestDropBoundingSet(t *testing.T) {
	if os.Geteuid() != 0 {
		sbxtest.Skip(t, sbxtest.Root, "needs root to run the helper as another user")
	}
	// A copy of the test binary the other user can run.
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "sandbox.test")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ mode, want string }{
		{"nested", "ok"},
		{"sandbox", "error: capability 0 is in the bounding set and cannot be dropped"},
	} {
		cmd := exec.Command(bin, "-test.run=^TestDropBoundingSetHelper$")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), dropHelperEnv+"="+tc.mode)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: helper: %v (%s)", tc.mode, err, out)
		}
		if got := strings.TrimSpace(string(out)); !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.mode, got, tc.want)
		}
	}
	// With CAP_SETPCAP (root here), in a child so that this process keeps
	// its set: everything is dropped.
	cmd := exec.Command(os.Args[0], "-test.run=^TestDropBoundingSetHelper$")
	cmd.Env = append(os.Environ(), dropHelperEnv+"=sandbox")
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Errorf("as root: %q, %v; want ok", out, err)
	}
	if in, _ := unix.PrctlRetInt(unix.PR_CAPBSET_READ, unix.CAP_SYS_ADMIN, 0, 0, 0); in != 1 {
		t.Error("the test process lost CAP_SYS_ADMIN from its bounding set")
	}
}
