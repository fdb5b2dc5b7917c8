package main

// Protected paths against every way to replace them (issue 13, section 3):
// each attack runs in a real sandbox and reports the exact errno of each
// step; the host's files are checked afterwards, and a control shows the
// same step working on an unprotected path and on the entry opened with
// --rw.

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// opsScript runs each argument "OP:ARG[:ARG]" (paths relative to the
// cwd) and prints "STEP OK" or "STEP ERRNO" for each, in order; exchange
// is renameat2 with RENAME_EXCHANGE.
const opsScript = `import ctypes, errno, os, shutil, sys
libc = ctypes.CDLL(None, use_errno=True)
def write(p):
    with open(p, "w") as f:
        f.write("attack\n")
def exchange(a, b):
    # renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE)
    if libc.renameat2(-100, a.encode(), -100, b.encode(), 2) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
ops = {"write": write, "rename": os.rename, "mkdir": os.mkdir, "makedirs": os.makedirs,
       "rmdir": os.rmdir, "unlink": os.unlink, "rmtree": shutil.rmtree, "symlink": os.symlink,
       "exchange": exchange}
for step in sys.argv[1:]:
    op, *args = step.split(":")
    try:
        ops[op](*args)
        r = "OK"
    except OSError as e:
        r = errno.errorcode.get(e.errno, str(e.errno))
    print(step, r, flush=True)
`

// protectFixture lays out a workspace: a repository with a hook, a nested
// repository, a submodule with a gitfile, .config/fish, .github/workflows,
// and unprotected lookalikes of each (in the as-user mode, all the user's).
func protectFixture(t *testing.T, ws string) {
	t.Helper()
	for _, f := range []string{
		".git/hooks/pre-commit", ".git/config", ".git/modules/mod/hooks/post-checkout",
		"lib/repo/.git/hooks/pre-commit", "lib/repo/.git/config", "lib/repo/src/main.c",
		".config/fish/config.fish", ".config/other/settings",
		".github/workflows/ci.yml", ".github/CODEOWNERS",
		"plain/hooks/pre-commit", "plain/sub/file",
	} {
		p := filepath.Join(ws, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, p, "original\n", 0o755)
	}
	if err := os.MkdirAll(filepath.Join(ws, "mod"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ws, "mod/.git"), "gitdir: ../.git/modules/mod\n", 0o644)
	writeFile(t, filepath.Join(ws, "mod/file"), "original\n", 0o644)
	chownTree(t, ws)
}

// chownTree hands every entry below root to the test user in the as-user
// mode.
func chownTree(t *testing.T, root string) {
	t.Helper()
	if !rootless() {
		return
	}
	err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err == nil {
			err = os.Lchown(p, asUser.uid, asUser.gid)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// ops runs the steps in a sandbox with flags; it fails t unless the
// script ran to its end, and returns each step's result.
func (b *box) ops(flags []string, steps ...string) map[string]string {
	b.t.Helper()
	args := append(append(slices.Clone(flags), "--", "python3", "-c", opsScript), steps...)
	r := b.run(args...)
	got := map[string]string{}
	for _, l := range lines(r.stdout) {
		step, res, _ := strings.Cut(l, " ")
		got[step] = res
	}
	if r.code != 0 || len(got) != len(steps) {
		b.t.Fatalf("sbx run %q: want exit 0 and %d results\n%v", flags, len(steps), r)
	}
	return got
}

// wantOps fails t for each step whose result is not want's.
func wantOps(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got[k] != want[k] {
			t.Errorf("%s: %s = %s, want %s", what, k, got[k], want[k])
		}
	}
}

// hostHas fails t unless each file below ws has the content given (""
// for "must not exist").
func hostHas(t *testing.T, ws string, files map[string]string) {
	t.Helper()
	for _, f := range slices.Sorted(maps.Keys(files)) {
		if files[f] == "" {
			if _, err := os.Lstat(filepath.Join(ws, f)); err == nil {
				t.Errorf("host: %s exists after the run", f)
			}
			continue
		}
		if data, err := os.ReadFile(filepath.Join(ws, f)); err != nil || string(data) != files[f] {
			t.Errorf("host: %s = %q (%v), want %q", f, data, err, files[f])
		}
	}
}

// TestProtectedReplace: with --write, no way to replace a protected
// entry works: writing a nested repository's hook, rewriting or removing
// a submodule's gitfile, renaming an ancestor of .config/fish or of a
// nested repository to build a lookalike in its place, rm -rf of .git,
// writing .github/workflows. The same steps work on unprotected
// lookalikes, and on the entry when --rw opens it.
func TestProtectedReplace(t *testing.T) {
	requireRoot(t)
	orig := "original\n"
	for _, tc := range []struct {
		name  string
		flags []string
		want  map[string]string
		// host are the workspace files to check afterwards.
		host map[string]string
	}{
		{
			name:  "nested repository hook",
			flags: []string{"--write"},
			want: map[string]string{
				"write:lib/repo/.git/hooks/pre-commit":   "EROFS",
				"write:lib/repo/.git/hooks/post-commit":  "EROFS",
				"unlink:lib/repo/.git/config":            "EROFS",
				"rmdir:lib/repo/.git":                    "EBUSY",
				"rename:lib/repo/.git:lib/repo/.git.old": "EBUSY",
				// Controls: the rest of the repository, and a lookalike.
				"write:lib/repo/src/main.c":    "OK",
				"write:plain/hooks/pre-commit": "OK",
				// The pins are mount points: a rename out of one
				// crosses mounts (mv copies instead).
				"rename:lib/repo/src/main.c:main.c": "EXDEV",
			},
			host: map[string]string{"lib/repo/.git/hooks/pre-commit": orig, "lib/repo/.git/hooks/post-commit": "", "lib/repo/.git/config": orig, "lib/repo/src/main.c": "attack\n"},
		},
		{
			name:  "nested repository hook opened with --rw",
			flags: []string{"--write", "--rw", "lib/repo/.git"},
			want:  map[string]string{"write:lib/repo/.git/hooks/pre-commit": "OK", "write:.git/hooks/pre-commit": "EROFS"},
			host:  map[string]string{"lib/repo/.git/hooks/pre-commit": "attack\n", ".git/hooks/pre-commit": orig},
		},
		{
			name:  "top-level .git opened with --rw",
			flags: []string{"--write", "--rw", ".git"},
			want:  map[string]string{"write:.git/hooks/pre-commit": "OK", "write:lib/repo/.git/hooks/pre-commit": "EROFS"},
			host:  map[string]string{".git/hooks/pre-commit": "attack\n", "lib/repo/.git/hooks/pre-commit": orig},
		},
		{
			name:  "submodule gitfile",
			flags: []string{"--write"},
			want: map[string]string{
				"write:mod/.git":                             "EROFS",
				"unlink:mod/.git":                            "EBUSY",
				"rename:mod/file:mod/.git":                   "EBUSY",
				"rename:mod:mod2":                            "EBUSY",
				"write:.git/modules/mod/hooks/post-checkout": "EROFS",
				"write:mod/file":                             "OK",
			},
			host: map[string]string{"mod/.git": "gitdir: ../.git/modules/mod\n", ".git/modules/mod/hooks/post-checkout": orig, "mod/file": "attack\n"},
		},
		{
			name:  "submodule gitfile opened with --rw",
			flags: []string{"--write", "--rw", "mod/.git"},
			want:  map[string]string{"write:mod/.git": "OK"},
			host:  map[string]string{"mod/.git": "attack\n"},
		},
		{
			name:  "rename an ancestor and rebuild",
			flags: []string{"--write"},
			want: map[string]string{
				"rename:.config:.config.moved":   "EBUSY",
				"makedirs:.config/fish":          "EEXIST",
				"write:.config/fish/config.fish": "EROFS",
				"rename:lib:lib2":                "EBUSY",
				"rename:lib/repo:lib/repo2":      "EBUSY",
				"exchange:lib:plain":             "EBUSY",
				"makedirs:lib/repo/.git/hooks":   "EEXIST",
				"exchange:.config:plain/sub":     "EBUSY",
				// Controls: the same on unprotected trees.
				"exchange:plain/hooks:plain/sub":      "OK",
				"rename:.config/other:.config/other2": "OK",
				"rename:plain:plain2":                 "OK",
				"makedirs:plain/sub/.git":             "OK",
			},
			host: map[string]string{".config/fish/config.fish": orig, "lib/repo/.git/hooks/pre-commit": orig, "lib/repo/src/main.c": orig, ".config/other2/settings": orig, "plain2/sub/pre-commit": orig, "plain2/hooks/file": orig},
		},
		{
			name:  "rm -rf of .git",
			flags: []string{"--write"},
			want:  map[string]string{"rmtree:.git": "EROFS", "rmdir:.git": "EBUSY", "rmtree:plain": "OK"},
			host:  map[string]string{".git/hooks/pre-commit": orig, ".git/config": orig, "plain/sub/file": ""},
		},
		{
			name:  ".github/workflows",
			flags: []string{"--write"},
			want: map[string]string{
				"write:.github/workflows/ci.yml":   "EROFS",
				"write:.github/workflows/evil.yml": "EROFS",
				"rename:.github:.gh":               "EBUSY",
				"rmtree:.github/workflows":         "EROFS",
				"write:.github/CODEOWNERS":         "OK",
			},
			host: map[string]string{".github/workflows/ci.yml": orig, ".github/workflows/evil.yml": "", ".github/CODEOWNERS": "attack\n"},
		},
		{
			name:  ".github/workflows opened with --rw",
			flags: []string{"--write", "--rw", ".github/workflows"},
			want:  map[string]string{"write:.github/workflows/ci.yml": "OK"},
			host:  map[string]string{".github/workflows/ci.yml": "attack\n"},
		},
		{
			name:  "read-write directory: its repositories stay protected",
			flags: []string{"--rw", "lib"},
			want: map[string]string{
				"write:lib/repo/.git/hooks/pre-commit": "EROFS",
				"rename:lib/repo:lib/repo2":            "EBUSY",
				"write:lib/repo/src/main.c":            "OK",
				"write:plain/sub/file":                 "EROFS",
			},
			host: map[string]string{"lib/repo/.git/hooks/pre-commit": orig, "lib/repo/src/main.c": "attack\n"},
		},
		{
			// No pin inside an --ro path: a pin is a writable mount.
			name:  "--ro directory holding a repository in the writable workspace",
			flags: []string{"--write", "--ro", "lib"},
			want: map[string]string{
				"write:lib/repo/src/main.c":            "EROFS",
				"write:lib/repo/.git/hooks/pre-commit": "EROFS",
				"rename:lib/repo:lib/repo2":            "EROFS",
				"write:plain/sub/file":                 "OK",
			},
			host: map[string]string{"lib/repo/src/main.c": orig, "lib/repo/.git/hooks/pre-commit": orig, "plain/sub/file": "attack\n"},
		},
		{
			name:  "without --write",
			flags: nil,
			want:  map[string]string{"write:.git/hooks/pre-commit": "EROFS", "rename:.config:.config.moved": "EROFS", "write:plain/sub/file": "EROFS"},
			host:  map[string]string{".git/hooks/pre-commit": orig, ".config/fish/config.fish": orig, "plain/sub/file": orig},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBox(t)
			protectFixture(t, b.ws)
			wantOps(t, "in the sandbox", b.ops(tc.flags, slices.Sorted(maps.Keys(tc.want))...), tc.want)
			hostHas(t, b.ws, tc.host)
		})
	}
}

// TestProtectedSymlink: a protected entry that is a symlink (.git -> .bare)
// could be unlinked and replaced with a directory of the program's (a .git
// with a hook that the host's git runs): with --write, sbx refuses to run
// (125, naming the entry and the fix) and the program never starts.
// Opened with --rw .git the run goes ahead and the replacement works, as
// it does in a read-only workspace's control on the host.
func TestProtectedSymlink(t *testing.T) {
	b := newBox(t)
	if err := os.MkdirAll(filepath.Join(b.ws, ".bare/hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".bare", filepath.Join(b.ws, ".git")); err != nil {
		t.Fatal(err)
	}
	chownTree(t, b.ws)
	replace := "rm .git && mkdir -p .git/hooks && echo attack > .git/hooks/pre-commit && echo ran > ran"
	gitPath := filepath.Join(b.ws, ".git")

	r := b.run("--write", "--", "sh", "-c", replace)
	want := "sbx: protected entry is a symlink: " + gitPath + " (-> .bare) could be replaced by the program with one of its own, which the host would then use; run without --write, or open it deliberately with --rw " + gitPath + "\n"
	if r.code != exitSbxError || r.stdout != "" || r.stderr != want {
		t.Errorf("--write with .git a symlink: want exit 125 and\n%q\n%v", want, r)
	}
	if target, err := os.Readlink(gitPath); err != nil || target != ".bare" {
		t.Errorf("host: .git is no longer the symlink to .bare: %q, %v", target, err)
	}
	hostHas(t, b.ws, map[string]string{"ran": ""})

	// Without --write nothing is writable: the run goes ahead, and the
	// replacement fails.
	if r := b.run("--", "sh", "-c", replace); r.code == 0 || !strings.Contains(r.stderr, "Read-only file system") {
		t.Errorf("read-only workspace with .git a symlink: want the run to go ahead and rm to fail with EROFS\n%v", r)
	}

	// Control: opened deliberately, the program may replace it.
	if r := b.run("--write", "--rw", ".git", "--", "sh", "-c", replace); r.code != 0 || r.stderr != "" {
		t.Errorf("--write --rw .git with .git a symlink: want the run to go ahead\n%v", r)
	}
	if fi, err := os.Lstat(gitPath); err != nil || !fi.IsDir() {
		t.Errorf("control: .git not replaced by a directory on the host: %v, %v", fi, err)
	}
	hostHas(t, b.ws, map[string]string{"ran": "ran\n", ".git/hooks/pre-commit": "attack\n"})
}

// TestProtectedHooksPath: the hooks directory that core.hooksPath names
// in the workspace is protected like .git; one that does not exist yet
// makes sbx refuse --write (the program could create it), naming the fix.
func TestProtectedHooksPath(t *testing.T) {
	b := newBox(t)
	for _, f := range []string{".git/config", ".githooks/pre-commit", "tools/pre-commit"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(b.ws, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(b.ws, f), "original\n", 0o755)
	}
	writeFile(t, filepath.Join(b.ws, ".git/config"), "[core]\n\thooksPath = .githooks\n", 0o644)
	chownTree(t, b.ws)
	steps := []string{"write:.githooks/pre-commit", "rename:.githooks:.githooks.old", "write:tools/pre-commit"}
	wantOps(t, "--write", b.ops([]string{"--write"}, steps...), map[string]string{
		"write:.githooks/pre-commit": "EROFS", "rename:.githooks:.githooks.old": "EBUSY", "write:tools/pre-commit": "OK",
	})
	hostHas(t, b.ws, map[string]string{".githooks/pre-commit": "original\n", "tools/pre-commit": "attack\n"})
	wantOps(t, "--write --rw .githooks", b.ops([]string{"--write", "--rw", ".githooks"}, "write:.githooks/pre-commit"), map[string]string{"write:.githooks/pre-commit": "OK"})
	hostHas(t, b.ws, map[string]string{".githooks/pre-commit": "attack\n"})

	writeFile(t, filepath.Join(b.ws, ".git/config"), "[core]\n\thooksPath = .hooks-to-be\n", 0o644)
	missing := filepath.Join(b.ws, ".hooks-to-be")
	r := b.run("--write", "--", "sh", "-c", "mkdir .hooks-to-be")
	if want := "sbx: protected paths: core.hooksPath of " + filepath.Join(b.ws, ".git") + " names " + missing + ", which does not exist"; r.code != exitSbxError || !strings.HasPrefix(r.stderr, want) || len(lines(r.stderr)) != 1 {
		t.Errorf("--write with core.hooksPath missing: want exit 125 and %q...\n%v", want, r)
	}
	hostHas(t, b.ws, map[string]string{".hooks-to-be": ""})
}

// TestProtectedSwapRace: a directory above a protected entry replaced by
// a symlink between sbx's walk and the sandbox's mounts (as the program of
// another run on the same tree could) would make libcontainer mount what
// the link names, writable, in the pin's place. sbx checks each protected
// and pinned path in the set-up sandbox against what the walk found, and
// refuses to start the program (125). The sbxtest build does the swap
// (SBX_TEST_PROTECT_SWAP); without it the same binary runs the program.
func TestProtectedSwapRace(t *testing.T) {
	b := newBox(t)
	bin := testBin(t)
	protectFixture(t, b.ws)
	victim := b.tempDir()
	if err := os.MkdirAll(filepath.Join(victim, "repo/.git"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(victim, "keep"), "host\n", 0o644)
	chownTree(t, victim)
	lib := filepath.Join(b.ws, "lib")
	args := []string{"run", "--write", "--", "sh", "-c", "echo ran > ran; echo attack > lib/keep"}

	p := b.startCmd(opts{env: []string{"SBX_TEST_PROTECT_SWAP=" + lib + "=" + victim}}, bin, args...)
	p.sbxRun = true
	r := p.wait()
	want := "sbx: protected paths: " + lib + " in the sandbox is not what sbx found there (replaced while the sandbox was set up); not running\n"
	if r.code != exitSbxError || r.stdout != "" || r.stderr != want {
		t.Errorf("swap of %s after the walk: want exit 125 and %q\n%v", lib, want, r)
	}
	hostHas(t, b.ws, map[string]string{"ran": ""})
	hostHas(t, victim, map[string]string{"keep": "host\n"})

	// Control: the same binary, no swap.
	if err := os.Remove(lib); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(lib+".sbx-swapped", lib); err != nil {
		t.Fatal(err)
	}
	p = b.startCmd(opts{}, bin, args...)
	p.sbxRun = true
	if r := p.wait(); r.code != 0 || r.stderr != "" {
		t.Errorf("control: no swap: want the program to run\n%v", r)
	}
	hostHas(t, b.ws, map[string]string{"ran": "ran\n", "lib/keep": "attack\n"})
}

// TestProtectedUnreadable: rootless, sbx searches the workspace as the
// user, and meets directories the user may not read. One the user (and so
// the program) cannot even search holds nothing the program could change,
// and is skipped; one it can search but not read could hold a .git it
// reaches by name, and makes --write refuse to run (125, naming it). As
// root, sbx reads every directory and this cannot happen.
func TestProtectedUnreadable(t *testing.T) {
	b := newBox(t)
	if !rootless() {
		t.Skip("only a rootless sbx meets a directory it may not read (root reads all): run with " + asUserEnv)
	}
	for _, d := range []string{"locked/repo/.git", "searchable/repo/.git/hooks"} {
		if err := os.MkdirAll(filepath.Join(b.ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(b.ws, "searchable/repo/.git/hooks/pre-commit"), "original\n", 0o777)
	chownTree(t, b.ws)
	// Owned by root: the user gets only what the modes give others.
	locked, searchable := filepath.Join(b.ws, "locked"), filepath.Join(b.ws, "searchable")
	for d, mode := range map[string]os.FileMode{locked: 0o700, searchable: 0o711} {
		if err := os.Chown(d, 0, 0); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
	}
	r := b.run("--write", "--", "sh", "-c", "echo ran > ran")
	want := "sbx: protected paths: search " + searchable + ": open " + searchable + ": permission denied (let the user read it, or narrow --workspace)\n"
	if r.code != exitSbxError || r.stderr != want {
		t.Errorf("--write with %s searchable but not readable: want exit 125 and %q\n%v", searchable, want, r)
	}
	hostHas(t, b.ws, map[string]string{"ran": ""})
	// Control: the program could indeed reach the hook by name.
	if c := b.host(opts{}, "sh", "-c", "echo attack > searchable/repo/.git/hooks/pre-commit"); c.code != 0 {
		t.Errorf("control: the user writes the hook by name on the host\n%v", c)
	}

	if err := os.RemoveAll(searchable); err != nil {
		t.Fatal(err)
	}
	r = b.run("--write", "--", "sh", "-c", "echo ran > ran; ls locked")
	if r.code != 2 || r.stderr != "ls: cannot open directory 'locked': Permission denied\n" {
		t.Errorf("--write with %s unsearchable: want the run to go ahead, and ls to fail with EACCES\n%v", locked, r)
	}
	hostHas(t, b.ws, map[string]string{"ran": "ran\n"})
}
