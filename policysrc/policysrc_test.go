package policysrc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/hostfs"
)

// tree makes dir/{trusted,ws,rw,granted}/f.json (mode 0600) and returns dir.
func tree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"trusted", "ws", "rw", "granted", "open", "mode"} {
		if err := os.MkdirAll(filepath.Join(dir, d, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, d, "sub", "f.json"), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "open", "sub"), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "mode", "sub", "f.json"), 0o620); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCheckerWhy: a file a sandbox could have written may only tighten,
// and the reason names what made it so; the control (trusted/) may widen.
func TestCheckerWhy(t *testing.T) {
	dir := tree(t)
	root := func(what, p string) Root {
		r, ok := NewRoot(what, filepath.Join(dir, p))
		if !ok {
			t.Fatal(p)
		}
		return r
	}
	g := root("", "granted")
	c := Checker{
		UID:    os.Getuid(),
		Roots:  []Root{root("the workspace", "ws"), root("the writable path", "rw")},
		Grants: []Grant{{FileID: g.ID, Path: g.Path, Start: time.Now().Add(-time.Hour).UnixNano(), PID: 1}},
	}
	for _, tc := range []struct{ file, want string }{
		{"trusted/sub/f.json", ""},
		{"ws/sub/f.json", "it lies inside the workspace"},
		{"rw/sub/f.json", "it lies inside the writable path"},
		{"granted/sub/f.json", "while the run of sbx pid 1"},
		{"open/sub/f.json", "others may write the directory"},
		{"mode/sub/f.json", "others may write it (mode 0620)"},
	} {
		f, why, err := c.Open(filepath.Join(dir, tc.file))
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		f.Close()
		if (tc.want == "") != (why == "") || !strings.Contains(why, tc.want) {
			t.Errorf("%s: why %q, want %q", tc.file, why, tc.want)
		}
	}
	// A grant of another directory that had the same inode number (its
	// creation time differs) does not count.
	gf, err := os.Open(filepath.Join(dir, "granted"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := statLink(int(gf.Fd()))
	gf.Close()
	if err != nil {
		t.Fatal(err)
	}
	if l.birth != 0 {
		c.Grants[0].Birth = l.birth - 1
		if f, why, err := c.Open(filepath.Join(dir, "granted/sub/f.json")); err != nil || why != "" {
			t.Errorf("a grant of a reused inode number: why %q, err %v; want trusted", why, err)
		} else {
			f.Close()
		}
		c.Grants[0].Birth = l.birth
	}
	// A grant that ended before the file last changed does not count.
	c.Grants[0].End = time.Now().Add(-time.Minute).UnixNano()
	if f, why, err := c.Open(filepath.Join(dir, "granted/sub/f.json")); err != nil || why != "" {
		t.Errorf("grant ended before the change: why %q, err %v; want trusted", why, err)
	} else {
		f.Close()
	}
}

// TestCheckerRefusesPlanted: the file itself a symlink, or a FIFO: an
// error, never followed or blocked on.
func TestCheckerRefusesPlanted(t *testing.T) {
	dir := tree(t)
	link := filepath.Join(dir, "trusted", "link.json")
	if err := os.Symlink("sub/f.json", link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "trusted", "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	c := Checker{UID: os.Getuid()}
	var sl *SymlinkError
	if _, _, err := c.Open(link); !errors.As(err, &sl) {
		t.Errorf("symlink: %v, want a SymlinkError", err)
	}
	if _, _, err := c.Open(fifo); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("fifo: %v", err)
	}
}

// TestRecordLoad: a run's grants are running until its end is recorded;
// a grant of a process that is gone reads as ended.
func TestRecordLoad(t *testing.T) {
	state := t.TempDir()
	dir := tree(t)
	done, err := Record(state, []string{filepath.Join(dir, "rw"), filepath.Join(dir, "missing")})
	if err != nil {
		t.Fatal(err)
	}
	gs, err := Load(state)
	if err != nil || len(gs) != 1 || !gs[0].Running() || gs[0].Path != filepath.Join(dir, "rw") {
		t.Fatalf("after Record: %+v, %v", gs, err)
	}
	done()
	gs, _ = Load(state)
	if len(gs) != 1 || gs[0].Running() {
		t.Fatalf("after done: %+v", gs)
	}
	// A dead run (pid 0 never is a process of ours).
	err = update(state, func(gs []Grant) []Grant {
		return append(gs, Grant{FileID: hostfs.FileID{Dev: 1, Ino: 2}, Start: 1, PID: 0})
	})
	if err != nil {
		t.Fatal(err)
	}
	gs, _ = Load(state)
	if len(gs) != 2 || gs[1].Running() {
		t.Fatalf("a dead run's grant: %+v", gs)
	}
}

// TestCompact: past maxGrants, ended grants of one tree merge into one
// spanning them all; running ones are kept.
func TestCompact(t *testing.T) {
	var gs []Grant
	for i := range maxGrants + 10 {
		gs = append(gs, Grant{FileID: hostfs.FileID{Dev: 1, Ino: uint64(i % 5)}, Start: int64(i + 1), End: int64(i + 2)})
	}
	gs = append(gs, Grant{FileID: hostfs.FileID{Dev: 9, Ino: 9}, Start: 5, PID: 7})
	out := compact(gs)
	if len(out) != 6 {
		t.Fatalf("compact: %d grants, want 6: %s", len(out), fmt.Sprint(out))
	}
	for _, g := range out {
		if g.Dev == 1 && (g.Start > 5 || g.End < int64(maxGrants+5)) {
			t.Errorf("merged grant %+v does not span its runs", g)
		}
	}
}

// TestCovered: see settings' TestMergeByIdentity for the table; here the
// error of a symlink at a middle component names it.
func TestCovered(t *testing.T) {
	dir := tree(t)
	if err := os.Symlink("ws", filepath.Join(dir, "wl")); err != nil {
		t.Fatal(err)
	}
	roots := IDs([]string{filepath.Join(dir, "ws")})
	if ok, err := Covered(filepath.Join(dir, "ws", "sub", "f.json"), roots); !ok || err != nil {
		t.Errorf("control: %v %v", ok, err)
	}
	_, err := Covered(filepath.Join(dir, "wl", "sub"), roots)
	var sl *SymlinkError
	if !errors.As(err, &sl) || sl.Link != filepath.Join(dir, "wl") {
		t.Errorf("through a symlink: %v", err)
	}
}
