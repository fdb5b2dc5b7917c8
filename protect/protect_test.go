package protect

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestParseGitfile(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"gitdir: ../.git/modules/sub\n", "../.git/modules/sub"},
		{"gitdir: ./.bare", "./.bare"},
		{"gitdir: /abs/main/.git/worktrees/wt\r\n", "/abs/main/.git/worktrees/wt"},
		{"gitdir:  spaced  \n", "spaced"},
		{"gitdir:x\n", ""},
		{"ref: refs/heads/main\n", ""},
		{"", ""},
	} {
		if got := parseGitfile(tc.line); got != tc.want {
			t.Errorf("parseGitfile(%q) = %q, want %q", tc.line, got, tc.want)
		}
	}
}

func TestParseHooksPath(t *testing.T) {
	for _, tc := range []struct{ cfg, want string }{
		{"[core]\n\thooksPath = .githooks\n", ".githooks"},
		{"[Core]\n\tHOOKSPATH=.husky/_ ; husky\n", ".husky/_"},
		{"[core] hooksPath = \"dir with # hash\" # comment\n", "dir with # hash"},
		{"[core]\n\thooksPath = a\n[core]\n\thooksPath = b\n", "b"},
		{"[core \"x\"]\n\thooksPath = a\n", ""},
		{"[user]\n\thooksPath = a\n[core]\n\tbare = false\n", ""},
		{"[core]\n#\thooksPath = a\n", ""},
		{"", ""},
	} {
		if got := parseHooksPath(tc.cfg); got != tc.want {
			t.Errorf("parseHooksPath(%q) = %q, want %q", tc.cfg, got, tc.want)
		}
	}
}

// tree builds a workspace from specs: "d/" a directory, "f" an empty
// file, "f=TEXT" a file with TEXT, "l->TARGET" a symlink.
func tree(t *testing.T, specs ...string) string {
	t.Helper()
	ws := t.TempDir()
	for _, s := range specs {
		name, target, link := strings.Cut(s, "->")
		name, text, _ := strings.Cut(name, "=")
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case link:
			err = os.Symlink(target, p)
		case strings.HasSuffix(name, "/"):
			err = os.MkdirAll(p, 0o755)
		default:
			err = os.WriteFile(p, []byte(text), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return ws
}

func rel(ws string, ps []string) []string {
	out := []string{}
	for _, p := range ps {
		r, err := filepath.Rel(ws, p)
		if err != nil || strings.HasPrefix(r, "..") {
			r = p
		}
		out = append(out, r)
	}
	return out
}

func TestProtectPaths(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tree    []string
		write   bool
		ws      string   // the workspace, below the tree's top ("" for the top)
		rw, roF []string // --rw and --ro paths, relative to the tree's top
		ro, pin []string
		err     string // substring; "symlink" also checks ErrProtectedSymlink
	}{
		{name: "read-only workspace: nothing", tree: []string{".git/", ".envrc"}, ro: []string{}, pin: []string{}},
		{
			name:  "top-level names",
			tree:  []string{".git/hooks/", ".git/config", ".envrc", ".sbx-policy", ".vscode/", ".gitconfig", ".ssh/", ".bashrc", "src/main.go"},
			write: true,
			ro:    []string{".bashrc", ".envrc", ".git", ".gitconfig", ".sbx-policy", ".ssh", ".vscode"},
			pin:   []string{},
		},
		{
			name:  "nested repositories and their ancestors",
			tree:  []string{".git/", "a/b/.git/", "a/b/src/x.go", "c/.hg/", "c/d/.husky/", "e/.pre-commit-config.yaml"},
			write: true,
			ro:    []string{".git", "a/b/.git", "c/.hg", "c/d/.husky", "e/.pre-commit-config.yaml"},
			pin:   []string{"a", "a/b", "c", "c/d", "e"},
		},
		{
			name:  "multi-component names pin their first component",
			tree:  []string{".config/fish/config.fish", ".config/other/", ".github/workflows/ci.yml", "sub/.github/workflows/", "sub/.github/CODEOWNERS"},
			write: true,
			ro:    []string{".config/fish", ".github/workflows", "sub/.github/workflows"},
			pin:   []string{".config", ".github", "sub", "sub/.github"},
		},
		{
			name:  "home names only at the top",
			tree:  []string{"dotfiles/.bashrc", "dotfiles/.ssh/", "dotfiles/.config/fish/"},
			write: true,
			ro:    []string{}, pin: []string{},
		},
		{
			name:  "not inside protected dirs, nor node_modules",
			tree:  []string{".git/modules/sub/.git/", ".claude/.envrc", "node_modules/x/.git/", "node_modules/.vscode/"},
			write: true,
			ro:    []string{".claude", ".git"}, pin: []string{},
		},
		{
			name:  "submodule gitfile: the file, its git dir already covered",
			tree:  []string{".git/modules/sub/hooks/", ".gitmodules", "sub/.git=gitdir: ../.git/modules/sub\n"},
			write: true,
			ro:    []string{".git", ".gitmodules", "sub/.git"},
			pin:   []string{"sub"},
		},
		{
			name:  "bare layout: the gitfile's sibling git dir",
			tree:  []string{".bare/hooks/", ".git=gitdir: ./.bare\n", "wt/.git=gitdir: ../.bare/worktrees/wt\n", ".bare/worktrees/wt/commondir=../..\n"},
			write: true,
			ro:    []string{".bare", ".git", "wt/.git"},
			pin:   []string{"wt"},
		},
		{
			name:  "worktree gitdir deep in the tree, with its commondir",
			tree:  []string{"wt/.git=gitdir: ../repos/main.git/worktrees/wt\n", "repos/main.git/worktrees/wt/commondir=../..\n", "repos/main.git/hooks/"},
			write: true,
			ro:    []string{"repos/main.git", "wt/.git"},
			pin:   []string{"repos", "wt"},
		},
		{
			name:  "a .git directory's commondir elsewhere in the workspace",
			tree:  []string{"wt/.git/commondir=../../shared\n", "shared/hooks/"},
			write: true,
			ro:    []string{"shared", "wt/.git"}, pin: []string{"wt"},
		},
		{
			name:  "gitdir outside the trees: only the gitfile",
			tree:  []string{"sub/.git=gitdir: /nonexistent/x\n"},
			write: true,
			ro:    []string{"sub/.git"}, pin: []string{"sub"},
		},
		{
			// Planted by an earlier run: the config git reads is a symlink
			// to a file that names a hooks dir; sbx does not follow it.
			name:  "git config that is a symlink",
			tree:  []string{".git/hooks/", "cfg=[core]\n\thooksPath = .githooks\n", ".githooks/", ".git/config->../cfg"},
			write: true,
			err:   "symlink",
		},
		{
			name:  "gitfile that is fine, commondir that is a symlink",
			tree:  []string{"gd/", "sub/.git=gitdir: ../gd\n", "x=..\n", "gd/commondir->../x"},
			write: true,
			err:   "symlink",
		},
		{
			name:  "core.hooksPath in the workspace",
			tree:  []string{".git/config=[core]\n\thooksPath = .githooks\n", ".githooks/pre-commit", "sub/.git/config=[core]\nhooksPath=/nonexistent/hooks\n"},
			write: true,
			ro:    []string{".git", ".githooks", "sub/.git"},
			pin:   []string{"sub"},
		},
		{
			name:  "core.hooksPath of a worktree's git dir outside the trees",
			tree:  []string{".git=gitdir: GITDIR\n", "hooks/"},
			write: true,
			ro:    []string{".git", "hooks"}, pin: []string{},
		},
		{
			name:  "core.hooksPath that does not exist yet refused",
			tree:  []string{".git/config=[core]\n\thooksPath = .githooks\n"},
			write: true,
			err:   "does not exist",
		},
		{
			name:  "core.hooksPath through a symlink refused",
			tree:  []string{".git/config=[core]\n\thooksPath = .githooks\n", "real/", ".githooks->real"},
			write: true,
			err:   "symlink",
		},
		{
			name:  "a symlink to a directory is not walked",
			tree:  []string{"real/.git/", "alias->real", "ext->GITDIR"},
			write: true,
			ro:    []string{"real/.git"}, pin: []string{"real"},
		},
		{
			name:  "symlinked .git refused",
			tree:  []string{".bare/", ".git->.bare"},
			write: true,
			err:   "symlink",
		},
		{
			name:  "symlinked .git opened by --rw of its target",
			tree:  []string{".bare/", ".git->.bare"},
			write: true, rw: []string{".bare"},
			ro: []string{}, pin: []string{},
		},
		{
			name:  "symlinked rc file refused, even dangling",
			tree:  []string{".envrc->/nonexistent"},
			write: true,
			err:   "symlink",
		},
		{
			name:  "symlinked ancestor of a protected name refused",
			tree:  []string{"real/fish/", ".config->real"},
			write: true,
			err:   "symlink",
		},
		{
			name:  "gitdir through a symlink refused",
			tree:  []string{"store/mod/", "ln->store", "sub/.git=gitdir: ../ln/mod\n"},
			write: true,
			err:   "symlink",
		},
		{
			name:  "--rw PATH opens exactly PATH",
			tree:  []string{".git/", ".envrc", "sub/.git/", "sub/.envrc"},
			write: true, rw: []string{".git", "sub"},
			ro:  []string{".envrc", "sub/.envrc", "sub/.git"},
			pin: []string{},
		},
		{
			name:  "--rw inside a protected entry stays on top of it",
			tree:  []string{".git/hooks/"},
			write: true, rw: []string{".git/hooks"},
			ro: []string{".git"}, pin: []string{},
		},
		{
			name: "--rw dirs without --write: their repositories",
			tree: []string{".git/", "lib/x/.git/", "lib/.envrc", "lib/.bashrc"},
			rw:   []string{"lib"},
			ro:   []string{"lib/.envrc", "lib/x/.git"},
			pin:  []string{"lib/x"},
		},
		{
			name: "--rw of the workspace itself: as --write",
			tree: []string{".git/", ".bashrc", "sub/.envrc"},
			rw:   []string{"."},
			ro:   []string{".bashrc", ".git", "sub/.envrc"}, pin: []string{"sub"},
		},
		{
			name:  "nothing inside an --ro path of the writable workspace",
			tree:  []string{"vendor/lib/repo/.git/", "vendor/.envrc", "lib/.envrc"},
			write: true, roF: []string{"vendor"},
			ro: []string{"lib/.envrc"}, pin: []string{"lib"},
		},
		{
			name:  "--rw inside --ro inside the writable workspace",
			tree:  []string{"a/vendor/x/y/.git/"},
			write: true, roF: []string{"a/vendor"}, rw: []string{"a/vendor/x"},
			ro: []string{"a/vendor/x/y/.git"}, pin: []string{"a", "a/vendor/x/y"},
		},
		{
			name: "--rw above a read-only workspace: not inside the workspace",
			tree: []string{"proj/.git/", "proj/lib/.git/", "other/.git/", ".envrc"},
			ws:   "proj", rw: []string{"."},
			ro: []string{".envrc", "other/.git"}, pin: []string{"other"},
		},
		{
			name: "--rw above the writable workspace: both walked once",
			tree: []string{"proj/.git/", "proj/lib/.git/", "other/.git/"},
			ws:   "proj", write: true, rw: []string{"."},
			ro: []string{"other/.git", "proj/.git", "proj/lib/.git"}, pin: []string{"other", "proj/lib"},
		},
		{
			name:  "an --ro protected entry is read-only already",
			tree:  []string{".vscode/", "sub/.git/"},
			write: true, roF: []string{".vscode", "sub/.git"},
			ro: []string{}, pin: []string{},
		},
		{
			name:  "pins pass --rw mounts inside the workspace",
			tree:  []string{"a/b/c/.git/"},
			write: true, rw: []string{"a/b"},
			ro: []string{"a/b/c/.git"}, pin: []string{"a", "a/b/c"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// GITDIR: a git directory outside the workspace whose config
			// names the workspace's hooks dir.
			outside := t.TempDir()
			if err := os.WriteFile(filepath.Join(outside, "config"), []byte("[core]\n\thooksPath = hooks\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			for i := range tc.tree {
				tc.tree[i] = strings.ReplaceAll(tc.tree[i], "GITDIR", outside)
			}
			top := tree(t, tc.tree...)
			ws := filepath.Join(top, tc.ws)
			var rw, ro []string
			for _, p := range tc.rw {
				rw = append(rw, filepath.Join(top, p))
			}
			for _, p := range tc.roF {
				ro = append(ro, filepath.Join(top, p))
			}
			got, err := protectPaths(ws, tc.write, ro, rw)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || (tc.err == "symlink" && !errors.Is(err, ErrProtectedSymlink)) {
					t.Fatalf("protectPaths: err %v, want %q; got %+v", err, tc.err, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("protectPaths: %v", err)
			}
			if ro, pin := rel(top, got.ReadOnly), rel(top, got.Pinned); !reflect.DeepEqual(ro, tc.ro) || !reflect.DeepEqual(pin, tc.pin) {
				t.Errorf("protectPaths:\nread-only %q\npinned    %q\nwant\nread-only %q\npinned    %q", ro, pin, tc.ro, tc.pin)
			}
		})
	}
}

// TestProtectPathsBounds: a tree too big to search, or with too many
// entries to protect, fails the run instead of leaving entries unprotected.
func TestProtectPathsBounds(t *testing.T) {
	lim := Limits{Dirs: 100, Time: time.Minute, Mounts: 10}
	ws := t.TempDir()
	for i := range lim.Mounts/2 + 1 {
		if err := os.MkdirAll(filepath.Join(ws, fmt.Sprintf("r%d", i), ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := protectPathsWith(ws, true, nil, nil, lim); err == nil || !strings.Contains(err.Error(), "12 entries and directories above them to protect, more than 10") {
		t.Errorf("%d nested repositories: err %v, want too many to protect", lim.Mounts/2+1, err)
	}
	if _, err := protectPathsWith(ws, false, nil, nil, lim); err != nil {
		t.Errorf("read-only workspace searched: %v", err)
	}

	wide := t.TempDir()
	for i := range lim.Dirs - 1 {
		if err := os.Mkdir(filepath.Join(wide, fmt.Sprintf("d%d", i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := protectPathsWith(wide, true, nil, nil, lim); err != nil {
		t.Errorf("%d directories (the workspace and all below it): %v", lim.Dirs, err)
	}
	if err := os.Mkdir(filepath.Join(wide, "one-more"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := protectPathsWith(wide, true, nil, nil, lim); err == nil || !strings.Contains(err.Error(), "more than 100 directories") {
		t.Errorf("%d directories: err %v, want the walk bound", lim.Dirs+1, err)
	}
	lim.Time = 0
	if _, err := protectPathsWith(ws, true, nil, nil, lim); err == nil || !strings.Contains(err.Error(), "took more than 0s") {
		t.Errorf("walk past its deadline: err %v, want the time bound", err)
	}
}

// BenchmarkProtectPaths measures the walk on a tree of 10,000 directories
// holding 20 nested repositories.
func BenchmarkProtectPaths(b *testing.B) {
	ws := b.TempDir()
	for i := range 100 {
		for j := range 99 {
			if err := os.MkdirAll(filepath.Join(ws, fmt.Sprintf("p%d/d%d", i, j)), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if i%5 == 0 {
			if err := os.Mkdir(filepath.Join(ws, fmt.Sprintf("p%d/.git", i)), 0o755); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	for b.Loop() {
		pr, err := protectPaths(ws, true, nil, nil)
		if err != nil || len(pr.ReadOnly) != 20 {
			b.Fatalf("protectPaths: %d entries, %v", len(pr.ReadOnly), err)
		}
	}
}

// TestProtectionVerify: verify passes when the paths are what the walk
// found (seen here through this process's own root), and fails when one
// was replaced after the walk: by another directory, or by a symlink.
func TestProtectionVerify(t *testing.T) {
	ws := tree(t, "lib/repo/.git/", ".envrc", "other/")
	pr, err := protectPaths(ws, true, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(pr.ids) != 4 { // lib/repo/.git, .envrc; lib, lib/repo
		t.Fatalf("ids of %d paths, want 4: %v", len(pr.ids), pr.ids)
	}
	if err := pr.Verify(os.Getpid()); err != nil {
		t.Fatalf("verify of an untouched tree: %v", err)
	}
	lib, other := filepath.Join(ws, "lib"), filepath.Join(ws, "other")
	for _, swap := range []struct {
		name     string
		in, undo func() error
	}{
		{"another directory", func() error { return os.Rename(other, lib) }, func() error { return os.Rename(lib, other) }},
		{"a symlink", func() error { return os.Symlink(other, lib) }, func() error { return os.Remove(lib) }},
	} {
		if err := os.Rename(lib, lib+".old"); err != nil {
			t.Fatal(err)
		}
		if err := swap.in(); err != nil {
			t.Fatal(err)
		}
		if err := pr.Verify(os.Getpid()); err == nil || !strings.Contains(err.Error(), lib+" in the sandbox is not what sbx found there") {
			t.Errorf("verify after %s was replaced by %s: %v", lib, swap.name, err)
		}
		if err := swap.undo(); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(lib+".old", lib); err != nil {
			t.Fatal(err)
		}
	}
	if err := pr.Verify(os.Getpid()); err != nil {
		t.Errorf("verify after the tree was restored: %v", err)
	}
}

// TestReadDir: readDir lists every entry of a directory bigger than its
// buffer, with the same names and directory bits as os.ReadDir.
func TestReadDir(t *testing.T) {
	dir := t.TempDir()
	want := map[string]bool{}
	for i := range 3000 {
		name := fmt.Sprintf("entry-with-a-long-name-to-fill-the-buffer-%04d", i)
		p := filepath.Join(dir, name)
		var err error
		switch i % 3 {
		case 0:
			err = os.Mkdir(p, 0o755)
		case 1:
			err = os.WriteFile(p, nil, 0o644)
		case 2:
			err = os.Symlink(dir, p) // a symlink to a directory is not one
		}
		if err != nil {
			t.Fatal(err)
		}
		want[name] = i%3 == 0
	}
	got, err := readDir(dir, make([]byte, 4096), nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range got {
		seen[e.name] = e.dir
	}
	if !reflect.DeepEqual(seen, want) || len(got) != len(want) {
		t.Errorf("readDir: %d entries, want %d; differences in names or types", len(got), len(want))
	}
	if _, err := readDir(filepath.Join(dir, "entry-with-a-long-name-to-fill-the-buffer-0002"), make([]byte, 4096), nil); !errors.Is(err, unix.ENOTDIR) {
		t.Errorf("readDir of a symlink: %v, want ENOTDIR (not followed)", err)
	}
}

// FuzzParseGitConfig: the parsers of a repository's files, which a
// previous run's program may have written, never panic and return a
// trimmed single-line path.
func FuzzParseGitConfig(f *testing.F) {
	for _, s := range []string{"[core]\n\thooksPath = .githooks\n", "[core] hookspath = \"a\\\"b\" ; c", "gitdir: ../x\n", "[", "\\", "\"", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for name, got := range map[string]string{"parseHooksPath": parseHooksPath(s), "parseGitfile": parseGitfile(s)} {
			if got != strings.TrimSpace(got) || strings.Contains(got, "\n") {
				t.Errorf("%s(%q) = %q: not a trimmed single line", name, s, got)
			}
		}
	})
}

// TestProtectPathsGitFIFO: a FIFO planted where git keeps its commondir or
// config (an earlier run could make one) neither blocks the run's setup
// nor counts as a file: the .git entry is still protected.
func TestProtectPathsGitFIFO(t *testing.T) {
	ws := tree(t, ".git/hooks/", "src/main.go")
	for _, name := range []string{"commondir", "config"} {
		if err := unix.Mkfifo(filepath.Join(ws, ".git", name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	type result struct {
		p   Protection
		err error
	}
	done := make(chan result, 1)
	go func() {
		p, err := protectPaths(ws, true, nil, nil)
		done <- result{p, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("protectPaths: %v", r.err)
		}
		if ro := rel(ws, r.p.ReadOnly); !reflect.DeepEqual(ro, []string{".git"}) {
			t.Errorf("read-only %q, want [.git]", ro)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("protectPaths blocked on a FIFO")
	}
}
