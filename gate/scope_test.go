package gate

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestScopeReadOnly: ro paths are accepted only inside the harness's
// roots, judged by the walked identities, never by name: a sibling that
// shares the root's prefix, a symbolic link out of the root (or through
// one at all), and any path without roots are refused, and a missing
// path outside the roots gets the same answer as an existing one.
func TestScopeReadOnly(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	out := filepath.Join(base, "root-evil")
	for _, d := range []string{root + "/d/sub", out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{root + "/f", out + "/secret"} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustSymlink(t, out, root+"/out")          // a link out of the root
	mustSymlink(t, root+"/d", root+"/inlink") // a link that stays inside
	mustSymlink(t, root, base+"/rootlink")    // the harness's root named through a link
	if err := unix.Mkfifo(root+"/fifo", 0o644); err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	req := func(ro ...string) Request { return Request{Command: []string{"ls"}, Workspace: ws, ReadOnly: ro} }
	scope := Scope{ReadOnlyRoots: []string{root}}

	// Inside: the root itself, a directory, a file, a path that is not clean.
	for _, p := range []string{root, root + "/d", root + "/d/sub", root + "/f", root + "/d/../f", root + "/"} {
		c, err := req(p).CheckIn(scope)
		if err != nil {
			t.Errorf("ro %s: %v", p, err)
			continue
		}
		if !slices.Equal(c.ReadOnly, []string{filepath.Clean(p)}) {
			t.Errorf("ro %s: resolved %q", p, c.ReadOnly)
		}
	}
	// The root through a symbolic link the harness chose.
	if _, err := req(root + "/f").CheckIn(Scope{ReadOnlyRoots: []string{base + "/rootlink"}}); err != nil {
		t.Errorf("root named through a link: %v", err)
	}

	const outside = "is outside the directories the harness allows"
	for _, c := range []struct{ p, want string }{
		{out, outside},
		{out + "/secret", outside},
		{out + "/missing", outside},
		{base, outside},
		{"/", outside},
		{"/etc/passwd", outside},
		{"/nonexistent/x", outside},
		{root + "/out/secret", "passes through a symbolic link"},
		{root + "/out", "passes through a symbolic link"},
		{root + "/inlink", "passes through a symbolic link"},
		{base + "/rootlink/f", outside}, // the link is walked as a link: outside
		{root + "/missing", "does not exist"},
		{root + "/f/x", "not a directory"},
		{root + "/fifo", "is neither a directory nor a regular file"},
		{root + "/../root-evil/secret", outside},
	} {
		_, err := req(c.p).CheckIn(scope)
		var re *RejectError
		if !errors.As(err, &re) || re.Field != "ro" || !strings.Contains(re.Reason, c.want) {
			t.Errorf("ro %s: %v, want a rejection of ro with %q", c.p, err, c.want)
		}
		if c.want == outside && !errors.Is(err, fs.ErrPermission) {
			t.Errorf("ro %s: %v does not match fs.ErrPermission", c.p, err)
		}
	}
	// No roots: no ro path at all (Check is the zero scope).
	for _, s := range []Scope{{}, {Stage: true}} {
		if _, err := req(root + "/f").CheckIn(s); err == nil || !strings.Contains(err.Error(), "--ro-root") {
			t.Errorf("no roots: %v", err)
		}
	}
	if _, err := req(root + "/f").Check(); err == nil {
		t.Error("Check accepted an ro path")
	}
	if _, err := req().Check(); err != nil {
		t.Errorf("Check without ro: %v", err)
	}
	// A missing root is the harness's error, and rejects.
	if _, err := req(root + "/f").CheckIn(Scope{ReadOnlyRoots: []string{base + "/gone"}}); err == nil {
		t.Error("a missing root was accepted")
	}
}

// TestScopeStage: "stage": true needs the harness's consent.
func TestScopeStage(t *testing.T) {
	r := Request{Command: []string{"pi"}, Workspace: t.TempDir(), Stage: true}
	_, err := r.CheckIn(Scope{})
	var re *RejectError
	if !errors.As(err, &re) || re.Field != "stage" || !strings.Contains(re.Reason, "--allow-stage") {
		t.Errorf("stage without the harness's consent: %v", err)
	}
	if _, err := r.Check(); err == nil {
		t.Error("Check accepted stage")
	}
	c, err := r.CheckIn(Scope{Stage: true})
	if err != nil || !c.Request.Stage {
		t.Errorf("stage with --allow-stage: %+v, %v", c, err)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
