package hostfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/sbxtest"
)

func TestDirNeverFollowsSymlinks(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	must(t, os.Mkdir(filepath.Join(root, "sub"), 0o755))
	must(t, os.Symlink(outside, filepath.Join(root, "link")))
	must(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("x"), 0o600))
	must(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "sub", "file")))

	d, err := OpenDir(root, nil)
	must(t, err)
	defer d.Close()
	tests := []struct {
		name string
		op   func() error
		want error
	}{
		{"open through a symlinked dir", func() error { _, err := d.Open("link/secret"); return err }, unix.ELOOP},
		{"open a symlink", func() error { _, err := d.Open("sub/file"); return err }, unix.ELOOP},
		{"create through a symlinked dir", func() error {
			_, err := d.OpenFile("link/new", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			return err
		}, unix.ELOOP},
		{"mkdir through a symlinked dir", func() error { return d.Mkdir("link/new", 0o700) }, unix.ELOOP},
		{"escape with ..", func() error { _, err := d.Open("sub/../../x"); return err }, unix.EXDEV},
		{"absolute name", func() error { _, err := d.Open("/etc/passwd"); return err }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.op()
			if err == nil {
				t.Fatal("succeeded")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	// The control: the same names without the symlinks work.
	f, err := d.OpenFile("sub/new", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	must(t, err)
	f.Close()
	if _, err := os.Stat(filepath.Join(outside, "new")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a file appeared outside: %v", err)
	}
	// Remove removes the link, not its target.
	must(t, d.Remove("link"))
	if _, err := os.Stat(filepath.Join(outside, "secret")); err != nil {
		t.Fatalf("the symlink's target is gone: %v", err)
	}
}

func TestOpenDirPathWithSymlink(t *testing.T) {
	root := t.TempDir()
	must(t, os.Mkdir(filepath.Join(root, "real"), 0o755))
	must(t, os.Symlink("real", filepath.Join(root, "link")))
	if _, err := OpenDir(filepath.Join(root, "link"), nil); !errors.Is(err, unix.ELOOP) {
		t.Fatalf("OpenDir through a symlink: %v, want ELOOP", err)
	}
	d, err := OpenDir(filepath.Join(root, "real"), nil)
	must(t, err)
	id, err := d.ID()
	must(t, err)
	d.Close()
	// Replaced by another directory of the same name: refused.
	must(t, os.Rename(filepath.Join(root, "real"), filepath.Join(root, "old")))
	must(t, os.Mkdir(filepath.Join(root, "real"), 0o755))
	if _, err := OpenDir(filepath.Join(root, "real"), &id); !errors.Is(err, ErrReplaced) {
		t.Fatalf("OpenDir of a replaced dir: %v, want ErrReplaced", err)
	}
	d, err = OpenDir(filepath.Join(root, "old"), &id)
	must(t, err)
	d.Close()
}

func TestRemoveAllKeepsSymlinkTargets(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "a", "b"), 0o755))
	must(t, os.WriteFile(filepath.Join(outside, "keep"), nil, 0o600))
	must(t, os.Symlink(outside, filepath.Join(root, "a", "b", "out")))
	d, err := OpenDir(root, nil)
	must(t, err)
	defer d.Close()
	must(t, d.RemoveAll("a"))
	if _, err := os.Stat(filepath.Join(outside, "keep")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(root, "a")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a is still there: %v", err)
	}
}

// TestCredDo checks that root acting for a user is held to the user's
// rights, creates files the user owns, and that no other thread keeps the
// switched identity.
func TestCredDo(t *testing.T) {
	if os.Geteuid() != 0 {
		sbxtest.Skip(t, sbxtest.Root, "needs root to switch identity")
	}
	const uid, gid = 65534, 65534
	c := Cred{UID: uid, GID: gid}
	rootOnly := t.TempDir() // 0700, root's
	open := t.TempDir()
	must(t, os.Chmod(open, 0o777))
	must(t, os.Chmod(filepath.Dir(open), 0o755)) // t.TempDir's parent is 0700

	err := c.Do(func() error {
		_, err := os.Create(filepath.Join(rootOnly, "x"))
		return err
	})
	if !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("create in a root-only dir as uid %d: %v, want EACCES", uid, err)
	}
	// Control: root itself can.
	must(t, os.WriteFile(filepath.Join(rootOnly, "x"), nil, 0o600))

	must(t, c.Do(func() error { return os.WriteFile(filepath.Join(open, "mine"), nil, 0o600) }))
	fi, err := os.Stat(filepath.Join(open, "mine"))
	must(t, err)
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != uid || st.Gid != gid {
		t.Fatalf("owner %d:%d, want %d:%d", st.Uid, st.Gid, uid, gid)
	}
	// AsSelf inside Do runs as root again.
	must(t, c.Do(func() error {
		return AsSelf(func() error { return os.WriteFile(filepath.Join(rootOnly, "y"), nil, 0o600) })
	}))
	// Afterwards, every thread is root's: many goroutines write root-only.
	errs := make(chan error, 32)
	for i := 0; i < 32; i++ {
		go func() {
			errs <- os.WriteFile(filepath.Join(rootOnly, "z"), nil, 0o600)
		}()
	}
	for i := 0; i < 32; i++ {
		must(t, <-errs)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestChownIf: the owner of the entry itself changes when the check
// accepts what the descriptor shows; a symlink's target never changes,
// and a refused entry keeps its owner.
func TestChownIf(t *testing.T) {
	if os.Geteuid() != 0 {
		sbxtest.Skip(t, sbxtest.Root, "changing an owner to another user needs root")
	}
	const uid = 65534
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "target")
	must(t, os.WriteFile(outside, nil, 0o600))
	must(t, os.Mkdir(filepath.Join(root, "dir"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "full"), []byte("x"), 0o600))
	must(t, os.Symlink(outside, filepath.Join(root, "link")))
	d, err := OpenDir(root, nil)
	must(t, err)
	defer d.Close()
	empty := func(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size == 0 }
	for _, tt := range []struct {
		rel     string
		changed bool
	}{{"dir", true}, {"full", false}, {"link", true}} {
		changed, err := d.ChownIf(tt.rel, uid, uid, empty)
		if err != nil || changed != tt.changed {
			t.Errorf("ChownIf(%s) = %v, %v; want %v", tt.rel, changed, err, tt.changed)
		}
		var st unix.Stat_t
		must(t, unix.Lstat(filepath.Join(root, tt.rel), &st))
		if want := map[bool]uint32{true: uid, false: 0}[tt.changed]; st.Uid != want {
			t.Errorf("%s owned by %d, want %d", tt.rel, st.Uid, want)
		}
	}
	var st unix.Stat_t
	must(t, unix.Stat(outside, &st))
	if st.Uid != 0 {
		t.Errorf("the symlink's target was changed to %d", st.Uid)
	}
}
