package gate

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/sbx-sandbox/sbx/hostfs"
)

// jailTree builds, under a fresh temp dir, a workspace thread-1 with
// siblings thread-12 and thread-1-evil and symbolic links of every kind. It
// returns the temp dir and the workspace's real path.
func jailTree(t *testing.T) (tmp, root string) {
	t.Helper()
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root = filepath.Join(tmp, "thread-1")
	for _, d := range []string{"thread-1/sub/deep", "thread-12/secret", "thread-1-evil", "outside/dir"} {
		if err := os.MkdirAll(filepath.Join(tmp, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "file.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"thread-1/link-in":              "sub",
		"thread-1/link-abs-in":          filepath.Join(root, "sub"),
		"thread-1/link-chain":           "link-in/deep",
		"thread-1/link-up-back":         "../thread-1/sub",
		"thread-1/sub/link-dotdot":      "..",
		"thread-1/sub/link-dotdot2":     "../..",
		"thread-1/link-out":             filepath.Join(tmp, "outside"),
		"thread-1/link-out-rel":         "../outside",
		"thread-1/link-root":            "/",
		"thread-1/link-etc":             "/etc",
		"thread-1/link-sibling":         "../thread-12",
		"thread-1/link-sibling-abs":     filepath.Join(tmp, "thread-12"),
		"thread-1/link-sibling-evil":    "../thread-1-evil",
		"thread-1/link-out-missing":     filepath.Join(tmp, "no-such-dir"),
		"thread-1/link-out-missing-rel": "../no-such-dir/x",
		"thread-1/link-loop":            "link-loop",
		"thread-1/link-file":            "file.txt",
		"thread-1/link-dangling-in":     "gone",
		"wslink":                        "thread-1",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(tmp, name)); err != nil {
			t.Fatal(err)
		}
	}
	return tmp, root
}

func listTree(t *testing.T, dir string) string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		names = append(names, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	return strings.Join(names, "\n")
}

func TestResolveWorkspaceInside(t *testing.T) {
	tmp, root := jailTree(t)
	before := listTree(t, tmp)
	tests := []struct{ cwd, want string }{
		{"", root},
		{".", root},
		{"./", root},
		{"sub", root + "/sub"},
		{"sub/", root + "/sub"},
		{"sub/deep", root + "/sub/deep"},
		{"sub/../sub/deep/..", root + "/sub"}, // lexical first
		{"nope/../sub", root + "/sub"},        // lexical: "nope" is never looked up
		{"link-in", root + "/sub"},
		{"link-in/deep", root + "/sub/deep"},
		{"link-abs-in", root + "/sub"},
		{"link-chain", root + "/sub/deep"},
		{"link-up-back", root + "/sub"}, // leaves towards an ancestor and comes back in
		{"sub/link-dotdot", root},
		{"sub/link-dotdot/sub", root + "/sub"},
	}
	for _, tt := range tests {
		gotRoot, dir, err := ResolveWorkspace(root, tt.cwd)
		if err != nil {
			t.Errorf("cwd %q: %v", tt.cwd, err)
			continue
		}
		if gotRoot != root || dir != tt.want {
			t.Errorf("cwd %q: got %q, %q; want %q, %q", tt.cwd, gotRoot, dir, root, tt.want)
		}
	}
	// A workspace named through a symbolic link resolves to its real path.
	gotRoot, dir, err := ResolveWorkspace(filepath.Join(tmp, "wslink"), "sub")
	if err != nil || gotRoot != root || dir != root+"/sub" {
		t.Errorf("workspace via link: got %q, %q, %v; want %q, %q", gotRoot, dir, err, root, root+"/sub")
	}
	if after := listTree(t, tmp); after != before {
		t.Errorf("resolving changed the disk:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

func TestResolveWorkspaceEscapes(t *testing.T) {
	tmp, root := jailTree(t)
	before := listTree(t, tmp)
	escapes := []string{
		"..", "../", "../thread-12", "../thread-1-evil", "../thread-12/secret", "../outside",
		"sub/../../outside", "../thread-1/sub", // even back into itself: it left lexically
		"link-out", "link-out/dir", "link-out-rel", "link-root", "link-etc", "link-etc/passwd",
		"link-sibling", "link-sibling/secret", "link-sibling-abs", "link-sibling-evil",
		"link-out-missing", "link-out-missing/deeper", "link-out-missing-rel",
		"sub/link-dotdot2",
	}
	for _, cwd := range escapes {
		_, _, err := ResolveWorkspace(root, cwd)
		if err == nil {
			t.Errorf("cwd %q: accepted, want an escape", cwd)
			continue
		}
		var re *RejectError
		if !errors.As(err, &re) || re.Field != "cwd" {
			t.Errorf("cwd %q: %v is not a cwd RejectError", cwd, err)
		}
		if !errors.Is(err, ErrEscape) || !errors.Is(err, fs.ErrPermission) {
			t.Errorf("cwd %q: %v does not wrap ErrEscape and fs.ErrPermission", cwd, err)
		}
		if errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), "exist") || strings.Contains(err.Error(), "no such") {
			t.Errorf("cwd %q: %v is an existence oracle", cwd, err)
		}
		if want := `cwd "` + cwd + `": path escapes workspace: permission denied`; err.Error() != want {
			t.Errorf("cwd %q: error %q, want %q", cwd, err, want)
		}
	}
	// The denials are real: outside the jail, these paths resolve.
	for _, p := range []string{"link-out", "link-sibling", "link-sibling-evil", "link-etc"} {
		if _, err := filepath.EvalSymlinks(filepath.Join(root, p)); err != nil {
			t.Errorf("%s does not resolve outside the jail either (%v): the test proves nothing", p, err)
		}
	}
	if _, err := filepath.EvalSymlinks(filepath.Join(root, "link-out-missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("link-out-missing should dangle, got %v", err)
	}
	if after := listTree(t, tmp); after != before {
		t.Errorf("resolving changed the disk")
	}
}

func TestResolveWorkspaceOtherErrors(t *testing.T) {
	tmp, root := jailTree(t)
	tests := []struct {
		ws, cwd, field, msg string
		is                  error
	}{
		{root, "nope", "cwd", `cwd "nope": no such directory in the workspace`, fs.ErrNotExist},
		{root, "sub/nope/x", "cwd", `cwd "sub/nope/x": no such directory in the workspace`, fs.ErrNotExist},
		{root, "sub/link-dotdot/../x", "cwd", `cwd "sub/link-dotdot/../x": no such directory in the workspace`, fs.ErrNotExist}, // lexical: sub/x
		{root, "link-dangling-in", "cwd", `cwd "link-dangling-in": no such directory in the workspace`, fs.ErrNotExist},
		{root, "file.txt", "cwd", `cwd "file.txt": not a directory`, syscall.ENOTDIR},
		{root, "file.txt/x", "cwd", `cwd "file.txt/x": not a directory`, syscall.ENOTDIR},
		{root, "link-file", "cwd", `cwd "link-file": not a directory`, syscall.ENOTDIR},
		{root, "link-loop", "cwd", `cwd "link-loop": too many levels of symbolic links`, syscall.ELOOP},
		{root + "/file.txt", "", "workspace", `workspace "` + root + `/file.txt" is not a directory`, syscall.ENOTDIR},
		{tmp + "/missing", "", "workspace", `workspace "` + tmp + `/missing" does not exist`, fs.ErrNotExist},
		{"thread-1", "", "workspace", `workspace "thread-1" is not an absolute path`, nil},
		{"", "", "workspace", `workspace is required`, nil},
	}
	for _, tt := range tests {
		_, _, err := ResolveWorkspace(tt.ws, tt.cwd)
		checkRejectMsg(t, err, tt.field, tt.msg)
		if tt.is != nil && !errors.Is(err, tt.is) {
			t.Errorf("%q %q: %v does not wrap %v", tt.ws, tt.cwd, err, tt.is)
		}
		if errors.Is(err, ErrEscape) {
			t.Errorf("%q %q: %v is not an escape", tt.ws, tt.cwd, err)
		}
	}
}

func TestResolveWorkspaceAbsoluteCwd(t *testing.T) {
	root := t.TempDir()
	for _, cwd := range []string{"/etc", "/nonexistent-sbx", root} {
		_, _, err := ResolveWorkspace(root, cwd)
		checkRejectMsg(t, err, "cwd", `cwd "`+cwd+`": path escapes workspace: permission denied`)
		if !errors.Is(err, ErrEscape) || !errors.Is(err, fs.ErrPermission) {
			t.Errorf("absolute cwd %q: %v is not an escape", cwd, err)
		}
	}
}

func TestResolveIn(t *testing.T) {
	_, root := jailTree(t)
	dir, err := ResolveIn(root, "link-in/deep")
	if err != nil || dir != root+"/sub/deep" {
		t.Fatalf("ResolveIn = %q, %v", dir, err)
	}
	_, err = ResolveIn(root, "link-sibling")
	checkRejectMsg(t, err, "path", `path "link-sibling": path escapes workspace: permission denied`)
}

func TestCheckResolves(t *testing.T) {
	tmp, root := jailTree(t)
	c, err := Request{Command: []string{"ls"}, Workspace: tmp + "/wslink", Cwd: "link-in", Write: true, ConfirmWrite: true, TimeoutMs: 10}.Check()
	if err != nil {
		t.Fatal(err)
	}
	if c.Root != root || c.Dir != root+"/sub" || !c.Writable || c.Timeout.Milliseconds() != 10 || c.Request.Cwd != "link-in" {
		t.Fatalf("Check = %+v", c)
	}
	// Static rules come before the disk: a bad command wins over a missing workspace.
	err = Request{Command: []string{"sh"}, Workspace: tmp + "/missing"}.Validate()
	if err == nil || !strings.Contains(err.Error(), "shell wrapper") {
		t.Fatalf("Validate = %v, want the shell rule", err)
	}
	err = Request{Command: []string{"ls"}, Workspace: root, Cwd: "link-out"}.Validate()
	if !errors.Is(err, ErrEscape) {
		t.Fatalf("Validate = %v, want an escape", err)
	}
}

func TestInside(t *testing.T) {
	tests := []struct {
		root, p string
		want    bool
	}{
		{"/w/thread-1", "/w/thread-1", true},
		{"/w/thread-1", "/w/thread-1/x", true},
		{"/w/thread-1", "/w/thread-12", false},
		{"/w/thread-1", "/w/thread-1-evil", false},
		{"/w/thread-1", "/w/thread-1-evil/x", false},
		{"/w/thread-1", "/w", false},
		{"/w/thread-1", "/", false},
		{"/", "/", true},
		{"/", "/etc", true},
	}
	for _, tt := range tests {
		if got := hostfs.Within(tt.p, tt.root); got != tt.want {
			t.Errorf("Within(%q, %q) = %v, want %v", tt.p, tt.root, got, tt.want)
		}
	}
	if ancestor("/w/thread-1", "/w/thread-12/x") || !ancestor("/w", "/w/thread-1") || !ancestor("/", "/w") || ancestor("/w", "/w") {
		t.Error("ancestor is wrong")
	}
}

func TestValidName(t *testing.T) {
	good := []string{"a", "A", "0", "run-1", "run_1", "run.1", "a.b-c_d", "...", "..a", ".hidden", "-", "_", strings.Repeat("x", 255)}
	for _, s := range good {
		if err := ValidName(s); err != nil {
			t.Errorf("ValidName(%q) = %v", s, err)
		}
	}
	bad := map[string]string{
		"":                       `name is empty`,
		".":                      `name "." is not allowed`,
		"..":                     `name ".." is not allowed`,
		"a/b":                    `name "a/b" may hold only A-Z a-z 0-9 . _ -`,
		"../../etc":              `name "../../etc" may hold only A-Z a-z 0-9 . _ -`,
		`a\b`:                    `name "a\\b" may hold only A-Z a-z 0-9 . _ -`,
		"a b":                    `name "a b" may hold only A-Z a-z 0-9 . _ -`,
		"a\x00":                  `name "a\x00" may hold only A-Z a-z 0-9 . _ -`,
		"a\n":                    `name "a\n" may hold only A-Z a-z 0-9 . _ -`,
		"é":                      `name "é" may hold only A-Z a-z 0-9 . _ -`,
		"\u212A":                 "name \"\u212A\" may hold only A-Z a-z 0-9 . _ -",
		"a:b":                    `name "a:b" may hold only A-Z a-z 0-9 . _ -`,
		"*":                      `name "*" may hold only A-Z a-z 0-9 . _ -`,
		strings.Repeat("x", 256): `name is 256 bytes long; the limit is 255`,
	}
	for s, msg := range bad {
		checkRejectMsg(t, ValidName(s), "name", msg)
	}
}
