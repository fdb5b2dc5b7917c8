package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuildRequiresSeccompTag builds cmd/sbx the ways that would leave it
// without a seccomp filter (no "seccomp" tag; no cgo) and requires the build
// to fail, not to produce a binary whose every run fails. Without the tag
// the error must name it (seccomp_required.go); without cgo runc's
// libcontainer itself does not compile (its userns package needs cgo)
// before the guard is reached, so only the failure is required there.
func TestBuildRequiresSeccompTag(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/sbx twice; skipped with -short")
	}
	// go test puts its own GOROOT/bin first on the test's PATH.
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool on PATH (%v)", err)
	}
	for _, tc := range []struct {
		name string
		tags string
		cgo  string
		want string // in go build's output; "" for any failure
	}{
		{"no tag", "", "1", "sbx_requires_cgo_and_build_tag_seccomp_see_make_build"},
		{"tag without cgo", "seccomp", "0", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "sbx")
			cmd := exec.Command(goTool, "build", "-tags", tc.tags, "-o", out, ".")
			cmd.Env = append(os.Environ(), "CGO_ENABLED="+tc.cgo, "GOFLAGS=")
			msg, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("go build -tags %q with CGO_ENABLED=%s succeeded; want a compile error naming the seccomp tag", tc.tags, tc.cgo)
			}
			if _, serr := os.Stat(out); serr == nil {
				t.Errorf("a binary was written to %s despite the failure", out)
			}
			if !strings.Contains(string(msg), tc.want) {
				t.Fatalf("go build failed without naming the tag (want %q in its output):\n%s", tc.want, msg)
			}
		})
	}
}
