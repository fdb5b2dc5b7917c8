package main

// Protected entries the program creates (issue 25, class 7): a .pi, .git,
// .github/workflows or .envrc that did not exist at the start of a run is
// not mounted read-only, so the program may create one; once the sandbox
// is gone sbx moves each aside (NAME.sbx-blocked-ID) and says so. Run as
// root, as root with sudo's environment, and rootless (deputyModes).

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// createdBox is a box for mode m whose workspace holds the files of
// fixture (the user's: in the sudo mode, SUDO_UID's).
func createdBox(t *testing.T, m deputyMode, fixture ...string) *box {
	t.Helper()
	b := newSerialBox(t)
	for _, f := range fixture {
		p := filepath.Join(b.ws, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, p, "original\n", 0o644)
	}
	chownTree(t, b.ws)
	if m.uid >= 0 {
		err := filepath.Walk(b.ws, func(p string, _ os.FileInfo, err error) error {
			if err == nil {
				err = os.Lchown(p, m.uid, m.uid)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// ownerOf is the uid owning the files of a run in mode m.
func ownerOf(m deputyMode) int {
	if m.uid >= 0 {
		return m.uid
	}
	return hostUID()
}

// blockedLine is sbx's line for the entry p moved aside to name.
func blockedLine(p, name string) string {
	return "sbx: moved " + p + " aside to " + name + ": the program created this protected entry, and what is in it runs outside the sandbox (git hooks, pi extensions, direnv, editor tasks); look at it, and move it back if you trust it"
}

// TestCreatedProtectedMovedAside: a protected entry the program creates
// (pkg/.pi with an extension, a nested sub/.git with a hook,
// .github/workflows in an existing .github, a symlink .envrc to
// /etc/passwd) is moved aside once the run ends, the run's status stays
// the program's, and sbx says so once per entry; an ordinary new
// directory created next to it stays.
func TestCreatedProtectedMovedAside(t *testing.T) {
	passwd := func() [32]byte {
		data, err := os.ReadFile("/etc/passwd")
		if err != nil {
			t.Fatal(err)
		}
		return sha256.Sum256(data)
	}
	for _, m := range deputyModes(t) {
		t.Run(m.name, func(t *testing.T) {
			for _, tc := range []struct {
				name    string
				fixture []string
				script  string
				entry   string // the entry created, moved aside
				inside  string // a file inside it, "" for a symlink
				stays   []string
			}{
				{"pi extension", nil, "mkdir -p pkg/.pi/extensions pkg/src/x && echo x > pkg/.pi/extensions/x.ts", "pkg/.pi", "extensions/x.ts", []string{"pkg/src/x"}},
				{"nested git hook", nil, "mkdir -p sub/.git/hooks && echo x > sub/.git/hooks/pre-commit", "sub/.git", "hooks/pre-commit", nil},
				{"workflows in .github", []string{".github/CODEOWNERS"}, "mkdir -p .github/workflows && echo x > .github/workflows/ci.yml", ".github/workflows", "ci.yml", []string{".github/CODEOWNERS"}},
				{"envrc symlink", nil, "ln -s /etc/passwd .envrc", ".envrc", "", nil},
			} {
				t.Run(tc.name, func(t *testing.T) {
					b := createdBox(t, m, tc.fixture...)
					before := passwd()
					r := b.runOpts(opts{env: m.env}, "--write", "--", "sh", "-c", tc.script)
					if r.code != 0 {
						t.Fatalf("want exit 0 (the program's)\n%v", r)
					}
					ws, err := filepath.EvalSymlinks(b.ws)
					if err != nil {
						t.Fatal(err)
					}
					entry := filepath.Join(ws, tc.entry)
					if _, err := os.Lstat(entry); !os.IsNotExist(err) {
						t.Errorf("%s is still there after the run (%v)", tc.entry, err)
					}
					moved, _ := filepath.Glob(entry + ".sbx-blocked-*")
					if len(moved) != 1 {
						t.Fatalf("want one %s.sbx-blocked-ID, got %q\n%v", tc.entry, moved, r)
					}
					name := filepath.Base(moved[0])
					if len(r.ids) == 1 && name != filepath.Base(entry)+".sbx-blocked-"+r.ids[0] {
						t.Errorf("moved to %s, want the run's id %s", name, r.ids[0])
					}
					if n := strings.Count(r.stderr, blockedLine(entry, name)); n != 1 {
						t.Errorf("sbx's line for %s appears %d times, want once\n%v", tc.entry, n, r)
					}
					if tc.inside == "" {
						if target, err := os.Readlink(moved[0]); err != nil || target != "/etc/passwd" {
							t.Errorf("the moved entry is not the symlink itself: %q, %v", target, err)
						}
					} else {
						var st syscall.Stat_t
						if err := syscall.Lstat(filepath.Join(moved[0], tc.inside), &st); err != nil {
							t.Errorf("the program's file is not in the moved entry: %v", err)
						} else if int(st.Uid) != ownerOf(m) {
							t.Errorf("the moved file is owned by %d, want %d", st.Uid, ownerOf(m))
						}
					}
					for _, s := range tc.stays {
						if _, err := os.Lstat(filepath.Join(ws, s)); err != nil {
							t.Errorf("%s (not protected) did not stay: %v", s, err)
						}
					}
					if passwd() != before {
						t.Error("/etc/passwd changed")
					}
				})
			}
		})
	}
}

// TestCreatedProtectedExisting: a .pi that existed at the start stays
// read-only (EROFS) and is not moved; opened with --rw on the command
// line, the program writes an extension in it and nothing is moved.
func TestCreatedProtectedExisting(t *testing.T) {
	for _, m := range deputyModes(t) {
		t.Run(m.name, func(t *testing.T) {
			for _, tc := range []struct {
				name  string
				flags []string
				code  int
				host  string // pkg/.pi/extensions/x.ts afterwards, "" for none
			}{
				{"read-only", []string{"--write"}, 1, ""},
				{"opened with --rw", []string{"--write", "--rw", "pkg/.pi"}, 0, "x\n"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					b := createdBox(t, m, "pkg/.pi/settings.json")
					args := append(tc.flags, "--", "sh", "-c", "mkdir -p pkg/.pi/extensions && echo x > pkg/.pi/extensions/x.ts")
					r := b.runOpts(opts{env: m.env}, args...)
					if r.code != tc.code {
						t.Fatalf("want exit %d\n%v", tc.code, r)
					}
					if tc.code != 0 && !strings.Contains(r.stderr, "Read-only file system") {
						t.Errorf("want EROFS\n%v", r)
					}
					if got := readFile(t, filepath.Join(b.ws, "pkg/.pi/settings.json")); got != "original\n" {
						t.Errorf("pkg/.pi/settings.json = %q", got)
					}
					moved, _ := filepath.Glob(filepath.Join(b.ws, "pkg/.pi.sbx-blocked-*"))
					if len(moved) != 0 || strings.Contains(r.stderr, "sbx: moved") {
						t.Errorf("an existing .pi was moved: %q\n%v", moved, r)
					}
					data, err := os.ReadFile(filepath.Join(b.ws, "pkg/.pi/extensions/x.ts"))
					if string(data) != tc.host || (tc.host == "" && !os.IsNotExist(err)) {
						t.Errorf("pkg/.pi/extensions/x.ts = %q (%v), want %q", data, err, tc.host)
					}
				})
			}
		})
	}
}
