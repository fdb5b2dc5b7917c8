package runner

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/sbx-sandbox/sbx/home"
	"github.com/sbx-sandbox/sbx/hostfs"
	"github.com/sbx-sandbox/sbx/sandbox"
	"golang.org/x/sys/unix"
)

// mountsrcFixture is a workspace and an sbx home in a fresh directory, and
// options that hold the workspace as resolvePaths would.
func mountsrcFixture(t *testing.T) (*Options, *sandbox.Spec, string) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, home := filepath.Join(dir, "ws"), filepath.Join(dir, "home")
	for _, d := range []string{ws, home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	o := &Options{cred: hostfs.Cred{UID: os.Geteuid(), GID: os.Getegid()}, StateDir: filepath.Join(dir, "state")}
	t.Cleanup(o.releaseHeld)
	if _, err := o.holdPath("workspace", ws, "/", false); err != nil {
		t.Fatal(err)
	}
	spec := &sandbox.Spec{Workspace: ws, Home: home, HomeInside: "/home/u"}
	return o, spec, dir
}

// TestHoldRest: the sources sbx made (here the sbx home) are held by the
// name the spec gives them; one swapped for a symlink since is refused.
func TestHoldRest(t *testing.T) {
	o, spec, _ := mountsrcFixture(t)
	if err := o.holdRest(spec); err != nil {
		t.Fatalf("holdRest: %v", err)
	}
	if _, ok := o.held[spec.Home]; !ok {
		t.Fatalf("the home is not held: %v", o.held)
	}

	o, spec, dir := mountsrcFixture(t)
	if err := os.Rename(spec.Home, filepath.Join(dir, "home.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", spec.Home); err != nil {
		t.Fatal(err)
	}
	if err := o.holdRest(spec); !errors.Is(err, hostfs.ErrChanged) {
		t.Fatalf("holdRest of a home swapped for a symlink to /: %v, want ErrChanged", err)
	}
}

// TestMakeMountPoints: a file mounted below the home's destination gets
// its mount point in the host home, created without following links; a
// symlink on the way refuses the run and creates nothing through it.
func TestMakeMountPoints(t *testing.T) {
	o, spec, dir := mountsrcFixture(t)
	src := filepath.Join(dir, "models.json")
	if err := os.WriteFile(src, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := o.holdPath("--ro", src, "/", true); err != nil {
		t.Fatal(err)
	}
	// The spec mounts src below the home's destination (as a profile's
	// file below ~/.pi/agent is): its own path is used as the
	// destination, so the home is shown at src's grandparent.
	spec.HomeInside = filepath.Dir(dir)
	spec.ReadOnly = []string{src}
	rel, _ := filepath.Rel(spec.HomeInside, src)
	if err := home.MakeMountPoints(o.cred, spec); err != nil {
		t.Fatalf("makeMountPoints: %v", err)
	}
	fi, err := os.Lstat(filepath.Join(spec.Home, rel))
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("mount point %s: %v %v", rel, fi, err)
	}

	// A symlink planted at the first component below the home.
	first := filepath.Join(spec.Home, filepath.Dir(filepath.Dir(rel)))
	outside := t.TempDir()
	if err := os.RemoveAll(first); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, first); err != nil {
		t.Fatal(err)
	}
	if err := home.MakeMountPoints(o.cred, spec); !errors.Is(err, unix.ENOTDIR) && !errors.Is(err, unix.ELOOP) {
		t.Fatalf("makeMountPoints through a symlink: %v, want a refusal", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("created through the symlink: %v", entries)
	}
}
