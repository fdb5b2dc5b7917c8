package runner

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/refuse"
)

// TestPolicyReadWriteResolved: a PolicyReadWrite path that resolves to
// another path than the one given (a symlink was put in its way after the
// caller resolved it) is refused; one that names a protected entry is
// left out, said on Log; the control, a real directory, is taken.
func TestPolicyReadWriteResolved(t *testing.T) {
	root := tree(t, "ws/build/", "ws/.git/", "elsewhere/", "ws/swapped->../elsewhere")
	ws := filepath.Join(root, "ws")
	var log strings.Builder
	opts := func(p string) *Options {
		return &Options{Args: []string{"true"}, Workspace: ws, Cwd: ws, PolicyReadWrite: []string{p},
			StateDir: t.TempDir(), Log: &log, HostEnv: []string{}}
	}
	o := opts(filepath.Join(ws, "build"))
	if err := o.resolvePaths(); err != nil || !slices.Contains(o.rw, filepath.Join(ws, "build")) {
		t.Fatalf("control, a real directory: %v, rw %q", err, o.rw)
	}
	var rej *refuse.Error
	if err := opts(filepath.Join(ws, "swapped")).resolvePaths(); !errors.As(err, &rej) || !strings.Contains(err.Error(), "resolves to "+filepath.Join(root, "elsewhere")) {
		t.Errorf("a path that is a symlink now: %v, want a RejectError", err)
	}
	o = opts(filepath.Join(ws, ".git"))
	if err := o.resolvePaths(); err != nil || len(o.rw) != 0 || !strings.Contains(log.String(), "keeping "+filepath.Join(ws, ".git")+" read-only") {
		t.Errorf("a protected entry: %v, rw %q, log %q; want it left out and said", err, o.rw, log.String())
	}
}
