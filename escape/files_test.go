package escape

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// TestWorkspaceLinkTricks: a writable workspace gives no way to the rest
// of the host. A symlink is resolved inside the sandbox's mount namespace
// (to the masked /etc/shadow, or to nothing for a host path that is not
// mounted); a hard link or a rename across mounts fails with EXDEV even
// where the host has one file system for all of them. The control does
// the same in a directory on the host.
func TestWorkspaceLinkTricks(t *testing.T) {
	b := newBox(t)
	secret := filepath.Join(t.TempDir(), "secret")
	writeFile(t, secret, "host secret\n", 0o644)
	attack := func(dir string) ([][]string, map[string]string) {
		j := func(n string) string { return filepath.Join(dir, n) }
		writeFile(t, j("f"), "workspace file\n", 0o644)
		s := [][]string{
			step("+symlink", "/etc/shadow", j("l-shadow")), step("read", j("l-shadow")),
			step("+symlink", "/proc/self/root/etc/shadow", j("l-alias")), step("read", j("l-alias")),
			step("+symlink", secret, j("l-secret")), step("read", j("l-secret")),
			step("+symlink", filepath.Dir(secret), j("l-dir")), step("read", j("l-dir/secret")),
			step("link", "/etc/passwd", j("h-passwd")), step("link", secret, j("h-secret")),
			step("rename", j("f"), "/tmp/f"), step("exchange", j("f"), "/etc/hostname"),
			step("rename", j("f"), "/etc/f"),
		}
		return s, map[string]string{
			"read(" + j("l-shadow") + ")":                "EMPTY",
			"read(" + j("l-alias") + ")":                 "EMPTY",
			"read(" + j("l-secret") + ")":                "ENOENT",
			"read(" + j("l-dir/secret") + ")":            "ENOENT",
			"link(/etc/passwd," + j("h-passwd") + ")":    "EXDEV",
			"link(" + secret + "," + j("h-secret") + ")": "ENOENT",
			"rename(" + j("f") + ",/tmp/f)":              "EXDEV",
			"exchange(" + j("f") + ",/etc/hostname)":     "EXDEV",
			"rename(" + j("f") + ",/etc/f)":              "EXDEV",
		}
	}
	s, want := attack(b.ws)
	r := b.attackIn([]string{"--write"}, steps(s...)...)
	wantSteps(t, "in the sandbox", r, want)
	if r.code != 0 {
		t.Errorf("in the sandbox: exit %d, want 0\n%v", r.code, r)
	}
	if _, err := os.Stat("/etc/f"); err == nil {
		t.Errorf("/etc/f appeared on the host")
	}
	// Control, without the steps that would change the host's /etc or
	// read its shadow file into a test directory.
	ctl := t.TempDir()
	s, _ = attack(ctl)
	j := func(n string) string { return filepath.Join(ctl, n) }
	tmpTarget := filepath.Join(t.TempDir(), "f")
	c := b.attackHost(opts{}, steps(s[4], s[5], s[6], s[7], s[8], step("rename", j("f"), tmpTarget))...)
	wantSteps(t, "control on the host", c, map[string]string{
		"read(" + j("l-secret") + ")":              "OK 12",
		"read(" + j("l-dir/secret") + ")":          "OK 12",
		"link(/etc/passwd," + j("h-passwd") + ")":  "OK",
		"rename(" + j("f") + "," + tmpTarget + ")": "OK",
	})
}

// fixture makes a git-like workspace with every protected entry, and
// returns the host path of the pre-commit hook and its content.
func fixture(t *testing.T, ws string) (string, string) {
	t.Helper()
	hook := filepath.Join(ws, ".git/hooks/pre-commit")
	const body = "#!/bin/sh\nexit 0\n"
	writeFile(t, hook, body, 0o755)
	for _, f := range []string{
		".git/config", ".git/HEAD", ".git/modules/sub/hooks/post-checkout", ".git/modules/sub/config",
		".gitmodules", ".envrc", ".vscode/settings.json", ".idea/workspace.xml", ".mcp.json",
		".bashrc", ".profile", ".zshrc", ".sbx.json", "evil",
	} {
		writeFile(t, filepath.Join(ws, f), "original\n", 0o644)
	}
	return hook, body
}

// TestProtectedPaths: with --write, the entries of the workspace that run
// later outside the sandbox (git hooks and config, direnv, editor and
// agent settings, shell rc files) stay read-only, through writes, new
// files, renames over them, hard links, symlinks, unlinks and renames of
// the entries themselves; --rw opens one. Renaming a protected entry's
// parent, and git's other ways to pick hooks and config (.git/commondir,
// submodules' own git dirs), are covered too (and, with nested
// repositories, symlinks and pinned ancestors, by TestProtected* in
// cmd/sbx).
func TestProtectedPaths(t *testing.T) {
	b := newBox(t)
	hook, body := fixture(t, b.ws)
	j := func(n string) string { return filepath.Join(b.ws, n) }
	t.Run("write", func(t *testing.T) {
		var s [][]string
		want := map[string]string{}
		for _, f := range []string{".git/hooks/pre-commit", ".git/config", ".gitmodules", ".envrc",
			".vscode/settings.json", ".idea/workspace.xml", ".mcp.json", ".bashrc", ".profile", ".zshrc", ".sbx.json"} {
			s = append(s, step("write", j(f)))
			want["write("+j(f)+")"] = "EROFS"
		}
		for _, f := range []string{".git/hooks/post-checkout", ".vscode/tasks.json", ".idea/x.xml"} {
			s = append(s, step("create", j(f)))
			want["create("+j(f)+")"] = "EROFS"
		}
		more := []struct {
			step []string
			want string
		}{
			{step("rename", j("evil"), j(".git/hooks/pre-commit")), "EXDEV"},
			{step("exchange", j("evil"), j(".git/hooks/pre-commit")), "EXDEV"},
			{step("rename", j("evil"), j(".envrc")), "EBUSY"},
			// EBUSY where .git/config is itself a mount point, EXDEV
			// or EROFS where all of .git is one (see bugs.md).
			{step("rename", j("evil"), j(".git/config")), "EBUSY|EXDEV"},
			{step("link", j("evil"), j(".git/hooks/pre-push")), "EROFS"},
			{step("symlink", j("evil"), j(".git/hooks/pre-push")), "EROFS"},
			{step("unlink", j(".git/hooks/pre-commit")), "EROFS"},
			{step("unlink", j(".envrc")), "EBUSY"},
			{step("unlink", j(".git/config")), "EBUSY|EROFS"},
			{step("rename", j(".git/hooks"), j(".git/hooks.old")), "EBUSY|EROFS"},
			{step("rename", j(".vscode"), j(".vscode.old")), "EBUSY"},
			{step("rmdir", j(".idea")), "EBUSY"},
		}
		for _, m := range more {
			s = append(s, m.step)
			want[m.step[0]+label(m.step[1:])] = m.want
		}
		r := b.in(t).attackIn([]string{"--write"}, steps(s...)...)
		wantSteps(t, "in the sandbox", r, want)
		if r.code != 0 {
			t.Errorf("in the sandbox: exit %d, want 0\n%v", r.code, r)
		}
		assertContent(t, hook, body)
		// Control: the same on the host (in a copy) all goes through.
		ctl := t.TempDir()
		fixture(t, ctl)
		c := b.in(t).attackHost(opts{}, "write", filepath.Join(ctl, ".git/hooks/pre-commit"), ";",
			"rename", filepath.Join(ctl, "evil"), filepath.Join(ctl, ".envrc"))
		if c.code != escaped || strings.Contains(c.stdout, " E") {
			t.Errorf("control on the host\n%v", c)
		}
	})
	t.Run("rename the parent", func(t *testing.T) {
		ws := t.TempDir()
		os.Chmod(ws, 0o755)
		bb := b.in(t)
		bb.ws, bb.attack = ws, filepath.Join(ws, "attack")
		copyFile(t, attackBin, bb.attack, 0o755)
		hook, body := fixture(t, ws)
		k := func(n string) string { return filepath.Join(ws, n) }
		// Move .git (not itself a mount point) away, then build a new
		// .git whose hooks are the program's.
		r := bb.attackIn([]string{"--write"}, steps(step("rename", k(".git"), k(".git-old")),
			step("mkdir", k(".git")), step("mkdir", k(".git/hooks")), step("create", k(".git/hooks/pre-commit")))...)
		if got := r.steps()["rename("+k(".git")+","+k(".git-old")+")"]; got == "OK" || r.code == escaped {
			t.Errorf("renaming .git (the parent of protected .git/hooks and .git/config) got through: the host's git now runs the program's hooks\n%v", r)
		}
		assertContent(t, hook, body)
	})
	t.Run("git commondir and submodules", func(t *testing.T) {
		// git reads config and hooks from the directory named in
		// .git/commondir, and each submodule's from .git/modules/NAME.
		r := b.in(t).attackIn([]string{"--write"}, steps(step("create", j(".git/commondir")),
			step("write", j(".git/modules/sub/hooks/post-checkout")), step("write", j(".git/modules/sub/config")))...)
		wantSteps(t, "in the sandbox", r, map[string]string{
			"create(" + j(".git/commondir") + ")":                      "EROFS",
			"write(" + j(".git/modules/sub/hooks/post-checkout") + ")": "EROFS",
			"write(" + j(".git/modules/sub/config") + ")":              "EROFS",
		})
	})
	t.Run("--rw opens one", func(t *testing.T) {
		ws := t.TempDir()
		os.Chmod(ws, 0o755)
		bb := b.in(t)
		bb.ws, bb.attack = ws, filepath.Join(ws, "attack")
		copyFile(t, attackBin, bb.attack, 0o755)
		hook, _ := fixture(t, ws)
		k := func(n string) string { return filepath.Join(ws, n) }
		r := bb.attackIn([]string{"--write", "--rw", k(".git/hooks")}, steps(step("write", hook), step("write", k(".git/config")), step("write", k(".envrc")))...)
		wantSteps(t, "in the sandbox", r, map[string]string{
			"write(" + hook + ")":             "OK",
			"write(" + k(".git/config") + ")": "EROFS",
			"write(" + k(".envrc") + ")":      "EROFS",
		})
		assertContent(t, hook, "attack\n")
	})
	t.Run("read-only workspace", func(t *testing.T) {
		r := b.in(t).attackIn(nil, steps(step("write", hook), step("create", j("new")), step("rename", j("evil"), j("evil2")))...)
		wantSteps(t, "in the sandbox", r, map[string]string{
			"write(" + hook + ")":                          "EROFS",
			"create(" + j("new") + ")":                     "EROFS",
			"rename(" + j("evil") + "," + j("evil2") + ")": "EROFS",
		})
		assertContent(t, hook, body)
	})
}

func assertContent(t *testing.T, path, want string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil || string(data) != want {
		t.Errorf("host %s = %q (%v), want %q", path, data, err, want)
	}
}

// maskedFiles and maskedDirs are the secrets of sandbox.MaskedPaths
// outside /proc: each is tested where the host has it.
var (
	maskedFiles = []string{
		"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers",
		"/etc/security/opasswd", "/etc/ssh/ssh_host_rsa_key", "/etc/ssh/ssh_host_ecdsa_key",
		"/etc/ssh/ssh_host_ed25519_key", "/etc/ssh/ssh_host_dsa_key",
	}
	maskedDirs = []string{"/etc/sudoers.d", "/etc/ssl/private", "/etc/libvirt", "/etc/docker", "/etc/containerd", "/etc/kubernetes"}
)

// TestSecretsMasked: the host's secrets under the visible /etc read as
// empty files (a /dev/null bind) or empty directories, by their path and
// through every alias: /proc/self/root, a dotdot path, a symlink in the
// workspace, PID 1's root; a hard link of one fails with EXDEV. Secrets
// this host lacks (sudoers, SSH host keys, ...) are made up for the test in
// an overlay of /etc that only the test's own mount namespace sees, and
// sbx runs in that namespace. The control reads them there on the host.
func TestSecretsMasked(t *testing.T) {
	b := newBox(t)
	var s, control [][]string
	want := map[string]string{}
	for _, p := range maskedFiles {
		link := filepath.Join(b.ws, "link-"+filepath.Base(p))
		hard := filepath.Join(b.ws, "hard-"+filepath.Base(p))
		alias := "/etc/../etc/" + strings.TrimPrefix(p, "/etc/")
		s = append(s, step("read", p), step("stat", p), step("read", "/proc/self/root"+p), step("read", alias),
			step("+symlink", p, link), step("read", link), step("link", p, hard), step("read", "/proc/1/root"+p))
		want["read("+p+")"] = "EMPTY"
		want["stat("+p+")"] = "INFO chr 1:3"
		want["read(/proc/self/root"+p+")"] = "EMPTY"
		want["read("+alias+")"] = "EMPTY"
		want["read("+link+")"] = "EMPTY"
		want["link("+p+","+hard+")"] = "EXDEV"
		if fi, err := os.Stat(p); err != nil || fi.Size() > 0 {
			control = append(control, step("read", p))
		}
	}
	for _, d := range maskedDirs {
		e := filepath.Join(d, secretEntry(d))
		s = append(s, step("ls", d), step("read", e), step("read", "/proc/self/root"+e))
		want["ls("+d+")"] = "EMPTY"
		want["read("+e+")"] = "ENOENT"
		want["read(/proc/self/root"+e+")"] = "ENOENT"
		control = append(control, step("read", e))
	}
	wrap := fakeSecrets(t)
	args := append([]string{sbxBin, "run", "--home", "tmp", "--write", "--", b.attack}, steps(s...)...)
	r, pid := b.exec(opts{sys: privateMounts()}, "sh", append(wrap, args...)...)
	assertNoLeftovers(t, pid)
	wantSteps(t, "in the sandbox", r, want)
	// PID 1's root is the same root: EMPTY now, EACCES once the shim is
	// not dumpable (TestProcAliases). Either way nothing leaks.
	for label, res := range r.steps() {
		if strings.HasPrefix(label, "read(/proc/1/root") && res != "EMPTY" && res != "EACCES" {
			t.Errorf("in the sandbox: %s = %q, want EMPTY or EACCES", label, res)
		}
	}
	if r.code != 0 {
		t.Errorf("in the sandbox: exit %d, want 0\n%v", r.code, r)
	}
	c, _ := b.exec(opts{sys: privateMounts()}, "sh", append(wrap, append([]string{b.attack}, steps(control...)...)...)...)
	for _, st := range control {
		if res := c.steps()[st[0]+label(st[1:])]; !strings.HasPrefix(res, "OK") {
			t.Errorf("control on the host: %s%s = %q, want OK", st[0], label(st[1:]), res)
		}
	}

	t.Run("root-only files", func(t *testing.T) {
		// The program runs as the invoking user; started by root (not
		// through sudo) that is uid 0, which owns root's files without
		// any capability: every file under /etc that only root may read
		// must be masked (sandbox.RootOnly), or it is readable inside.
		files := rootOnlyFiles(t, "/etc")
		var s [][]string
		for _, f := range files {
			s = append(s, step("read", f))
		}
		if len(s) == 0 {
			t.Skip("no root-only file under /etc")
		}
		r := b.in(t).attackIn(nil, steps(s...)...)
		if r.code != 0 && r.code != escaped {
			t.Fatalf("sbx failed\n%v", r)
		}
		var leaked []string
		for label, res := range r.steps() {
			if strings.HasPrefix(res, "OK") {
				leaked = append(leaked, strings.TrimSuffix(strings.TrimPrefix(label, "read("), ")"))
			}
		}
		sort.Strings(leaked)
		if len(leaked) > 0 {
			t.Errorf("files only root may read on the host are readable in the sandbox (sbx run by root): %q", leaked)
		}
	})
}

// rootOnlyFiles lists the non-empty regular files under dir that only root
// (by owner or group 0) may read, masked ones left out.
func rootOnlyFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && slices.Contains(maskedDirs, p) {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() || slices.Contains(maskedFiles, p) {
			return nil
		}
		fi, err := d.Info()
		if err != nil || fi.Size() == 0 {
			return nil
		}
		st := fi.Sys().(*syscall.Stat_t)
		m := fi.Mode().Perm()
		if m&0o004 == 0 && (st.Uid == 0 && m&0o400 != 0 || st.Gid == 0 && m&0o040 != 0) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// secretEntry is the name of a file in the masked directory d: its first
// entry on the host, or the one fakeSecrets makes.
func secretEntry(d string) string {
	if entries, err := os.ReadDir(d); err == nil && len(entries) > 0 {
		return entries[0].Name()
	}
	return "fake-secret"
}

// privateMounts runs a process in a mount namespace of its own (made
// private, so nothing it mounts reaches the host).
func privateMounts() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
}

// fakeSecrets returns the argv prefix (sh -c SCRIPT sh) of a shell that
// overlays /etc in its mount namespace (see privateMounts), creates every
// masked secret the host lacks there, and runs its arguments. The host's
// /etc is not written.
func fakeSecrets(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	upper, work := filepath.Join(dir, "upper"), filepath.Join(dir, "work")
	for _, d := range []string{upper, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := "set -e\nmount -t overlay overlay -o lowerdir=/etc,upperdir=" + upper + ",workdir=" + work + " /etc\n"
	for _, f := range maskedFiles {
		if _, err := os.Lstat(f); err != nil {
			script += "mkdir -p " + filepath.Dir(f) + "\necho 'fake secret' >" + f + "\nchmod 600 " + f + "\n"
		}
	}
	for _, d := range maskedDirs {
		if secretEntry(d) == "fake-secret" {
			script += "mkdir -p " + d + "\necho 'fake secret' >" + d + "/fake-secret\n"
		}
	}
	return []string{"-c", script + `exec "$@"` + "\n", "sh"}
}
