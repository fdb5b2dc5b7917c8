package sandbox

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/sbxtest"
)

func TestRootOnlyMode(t *testing.T) {
	for _, tc := range []struct {
		mode     fs.FileMode
		uid, gid uint32
		dir      bool
		want     bool
	}{
		{0o600, 0, 0, false, true},
		{0o640, 0, 42, false, true},   // owner root
		{0o040, 42, 0, false, true},   // group root only
		{0o640, 42, 42, false, false}, // not root's
		{0o644, 0, 0, false, false},   // readable by all
		{0o000, 0, 0, false, false},   // nobody reads it without DAC override
		{0o200, 0, 0, false, false},   // write only
		{0o700, 0, 0, true, true},
		{0o750, 42, 0, true, true},
		{0o755, 0, 0, true, false},
		{0o744, 0, 0, true, true}, // others may list but not search
	} {
		if got := rootOnly(tc.mode, tc.uid, tc.gid, tc.dir); got != tc.want {
			t.Errorf("rootOnly(%v, %d, %d, dir=%v) = %v, want %v", tc.mode, tc.uid, tc.gid, tc.dir, got, tc.want)
		}
	}
}

// TestRootOnly walks a tree with files and directories of every kind; the
// test runs as root, so its files are owned by uid 0.
func TestRootOnly(t *testing.T) {
	if os.Geteuid() != 0 {
		sbxtest.Skip(t, sbxtest.Root, "needs root (files owned by uid 0)")
	}
	dir := t.TempDir()
	mk := func(rel string, mode fs.FileMode, isDir bool) {
		p := filepath.Join(dir, rel)
		var err error
		if isDir {
			err = os.Mkdir(p, mode)
		} else {
			err = os.WriteFile(p, []byte("x"), mode)
		}
		if err == nil {
			err = os.Chmod(p, mode)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	mk("public", 0o644, false)
	mk("secret", 0o600, false)
	mk("group", 0o640, false)
	mk("sub", 0o755, true)
	mk("sub/key", 0o400, false)
	mk("sub/ok", 0o444, false)
	mk("private", 0o700, true)
	mk("private/inside", 0o600, false) // below a listed directory: not listed
	if err := os.Symlink("secret", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	got := RootOnly(dir)
	want := []string{filepath.Join(dir, "group"), filepath.Join(dir, "private"), filepath.Join(dir, "secret"), filepath.Join(dir, "sub/key")}
	if !slices.Equal(got, want) {
		t.Errorf("RootOnly = %q\nwant %q", got, want)
	}
	if got := RootOnly(filepath.Join(dir, "missing")); len(got) != 0 {
		t.Errorf("RootOnly of a missing dir = %q", got)
	}
}
