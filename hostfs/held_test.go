package hostfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestHold(t *testing.T) {
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "real", "ws"), 0o755))
	must(t, os.Symlink("real", filepath.Join(root, "link")))
	must(t, os.WriteFile(filepath.Join(root, "real", "file"), nil, 0o600))
	self := Cred{UID: os.Geteuid(), GID: os.Getegid()}

	// A path through a symlink resolves to the real one.
	h, err := self.Hold(filepath.Join(root, "link", "ws"))
	must(t, err)
	defer h.Close()
	realRoot, err := filepath.EvalSymlinks(root)
	must(t, err)
	if want := filepath.Join(realRoot, "real", "ws"); h.Path != want {
		t.Errorf("Path = %s, want %s", h.Path, want)
	}
	if h.Mode != fs.ModeDir {
		t.Errorf("Mode = %v, want a directory", h.Mode)
	}
	var st unix.Stat_t
	must(t, unix.Stat(filepath.Join(root, "real", "ws"), &st))
	if h.ID != (FileID{Dev: st.Dev, Ino: st.Ino}) {
		t.Errorf("ID = %+v, want %d/%d", h.ID, st.Dev, st.Ino)
	}
	if h.MntID == 0 {
		t.Error("no mount id (statx STATX_MNT_ID needs Linux 5.8)")
	}
	// The descriptor keeps naming the directory it opened after the name
	// is swapped for a symlink.
	must(t, os.Rename(filepath.Join(root, "real", "ws"), filepath.Join(root, "real", "ws.old")))
	must(t, os.Symlink("/", filepath.Join(root, "real", "ws")))
	id, err := IDOf(h.File)
	must(t, err)
	if id != h.ID {
		t.Errorf("held file changed identity: %+v", id)
	}
	// A second resolution follows the new link: what it holds is "/",
	// not the directory held before.
	h2, err := self.Hold(filepath.Join(root, "real", "ws"))
	must(t, err)
	defer h2.Close()
	if h2.Path != "/" || h2.ID == h.ID {
		t.Errorf("second Hold = %s %+v, want / (another file)", h2.Path, h2.ID)
	}
	f, err := self.Hold(filepath.Join(root, "real", "file"))
	must(t, err)
	defer f.Close()
	if f.Mode != 0 {
		t.Errorf("file Mode = %v, want regular", f.Mode)
	}
	if _, err := self.Hold(filepath.Join(root, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Hold of a missing path: %v, want ErrNotExist", err)
	}
}

func TestIDInRoot(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "a", "b"), 0o755))
	must(t, os.Symlink(outside, filepath.Join(root, "abs")))
	must(t, os.Symlink("a", filepath.Join(root, "rel")))
	r, err := os.Open(root)
	must(t, err)
	defer r.Close()
	var st unix.Stat_t
	must(t, unix.Stat(filepath.Join(root, "a", "b"), &st))
	id, err := IDInRoot(r, "/a/b")
	must(t, err)
	if id != (FileID{Dev: st.Dev, Ino: st.Ino}) {
		t.Fatalf("IDInRoot(/a/b) = %+v, want %d/%d", id, st.Dev, st.Ino)
	}
	for _, p := range []string{"/abs", "/rel/b", "/abs/x"} {
		if _, err := IDInRoot(r, p); !errors.Is(err, unix.ELOOP) {
			t.Errorf("IDInRoot(%s): %v, want ELOOP", p, err)
		}
	}
	// ".." stays in the root: /../a/b is /a/b.
	if id2, err := IDInRoot(r, "/../a/b"); err != nil || id2 != id {
		t.Errorf("IDInRoot(/../a/b) = %+v, %v; want %+v", id2, err, id)
	}
}
