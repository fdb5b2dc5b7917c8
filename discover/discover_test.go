package discover

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
)

func TestInterpreter(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, content, want string }{
		{"env", "#!/usr/bin/env node\nx", "node"},
		{"env -S", "#!/usr/bin/env -S node --no-warnings\n", "node"},
		{"env with a variable", "#!/usr/bin/env NODE_OPTIONS=x bun\n", "bun"},
		{"absolute", "#!/home/u/.local/share/pipx/venvs/x/bin/python\n", "/home/u/.local/share/pipx/venvs/x/bin/python"},
		{"space after #!", "#! /bin/sh -e\n", "/bin/sh"},
		{"no #!", "\x7fELF...", ""},
		{"empty #!", "#!\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, c.name)
			if err := os.WriteFile(p, []byte(c.content), 0o755); err != nil {
				t.Fatal(err)
			}
			if got := interpreter(p); got != c.want {
				t.Errorf("interpreter(%q) = %q, want %q", c.content, got, c.want)
			}
		})
	}
}

func TestVersionLess(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"v20.1.0", "v22.0.0", true},
		{"v22.0.0", "v20.1.0", false},
		{"v9.11.2", "v10.0.0", true},
		{"v20.10.0", "v20.9.0", false},
		{"v20", "v20.0.1", true},
	} {
		if got := versionLess(c.a, c.b); got != c.want {
			t.Errorf("versionLess(%s, %s) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestNpmrcPrefix(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ content, want string }{
		{"registry=https://r\nprefix=~/.npm-packages\n", "/h/.npm-packages"},
		{"prefix = \"/opt/npm\"\n", "/opt/npm"},
		{"prefix=relative\n", ""},
		{"; no prefix\n", ""},
	} {
		p := filepath.Join(dir, ".npmrc")
		if err := os.WriteFile(p, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := npmrcPrefix(p, "/h"); got != c.want {
			t.Errorf("npmrcPrefix(%q) = %q, want %q", c.content, got, c.want)
		}
	}
	if got := npmrcPrefix(filepath.Join(dir, "missing"), "/h"); got != "" {
		t.Errorf("missing .npmrc: %q", got)
	}
}

// installOf on real layouts: nvm's version directory, Bun's home, a venv,
// a single binary, and a symlink into a package elsewhere.
func TestInstallOf(t *testing.T) {
	h := t.TempDir()
	mk := func(p, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ln := func(target, link string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	nvm := filepath.Join(h, ".nvm/versions/node/v22.1.0")
	mk(filepath.Join(nvm, "lib/node_modules/@scope/pkg/dist/cli.js"), "#!/usr/bin/env node\n")
	ln("../lib/node_modules/@scope/pkg/dist/cli.js", filepath.Join(nvm, "bin/pkg"))
	bun := filepath.Join(h, ".bun")
	mk(filepath.Join(bun, "install/global/node_modules/tool/bin/t.js"), "#!/usr/bin/env bun\n")
	ln("../install/global/node_modules/tool/bin/t.js", filepath.Join(bun, "bin/tool"))
	local := filepath.Join(h, ".local")
	mk(filepath.Join(local, "share/pipx/venvs/x/pyvenv.cfg"), "")
	mk(filepath.Join(local, "share/pipx/venvs/x/bin/x"), "#!/x/python\n")
	ln(filepath.Join(local, "share/pipx/venvs/x/bin/x"), filepath.Join(local, "bin/x"))
	mk(filepath.Join(local, "lib/node_modules/npmpkg/cli.js"), "#!/usr/bin/env node\n")
	ln("../lib/node_modules/npmpkg/cli.js", filepath.Join(local, "bin/npmpkg"))
	mk(filepath.Join(local, "bin/single"), "\x7fELF")
	mk(filepath.Join(local, "share/claude/versions/1.2.3"), "\x7fELF")
	ln(filepath.Join(local, "share/claude/versions/1.2.3"), filepath.Join(local, "bin/claude"))

	for _, c := range []struct {
		found      string
		show, bins []string
	}{
		{filepath.Join(nvm, "bin/pkg"), []string{nvm}, []string{nvm + "/bin"}},
		{filepath.Join(bun, "bin/tool"), []string{bun}, []string{bun + "/bin"}},
		{filepath.Join(local, "bin/x"), []string{local + "/bin", local + "/share/pipx/venvs/x"}, []string{local + "/bin"}},
		{filepath.Join(local, "bin/npmpkg"), []string{local + "/bin", local + "/lib/node_modules/npmpkg"}, []string{local + "/bin"}},
		{filepath.Join(local, "bin/single"), []string{local + "/bin"}, []string{local + "/bin"}},
		{filepath.Join(local, "bin/claude"), []string{local + "/bin", local + "/share/claude/versions"}, []string{local + "/bin"}},
	} {
		show, bins := installOf(c.found)
		if !reflect.DeepEqual(show, c.show) || !reflect.DeepEqual(bins, c.bins) {
			t.Errorf("installOf(%s) = %q, %q; want %q, %q", c.found, show, bins, c.show, c.bins)
		}
	}
	if got := packageRoot(filepath.Join(nvm, "lib/node_modules/@scope/pkg/dist/cli.js")); got != filepath.Join(nvm, "lib/node_modules/@scope/pkg") {
		t.Errorf("packageRoot of a scoped package: %s", got)
	}
}

// ancestorPath walks a fake /proc up to the first process of the user.
func TestAncestorPath(t *testing.T) {
	proc := t.TempDir()
	add := func(pid, ppid, uid int, env string) {
		d := filepath.Join(proc, strconv.Itoa(pid))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		status := "Name:\tx\nPPid:\t" + strconv.Itoa(ppid) + "\nUid:\t" + strconv.Itoa(uid) + "\t0\t0\t0\n"
		if err := os.WriteFile(filepath.Join(d, "status"), []byte(status), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "environ"), []byte(env), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	add(30, 20, 0, "PATH=/usr/bin\x00")                                                       // sudo
	add(20, 10, 1000, "HOME=/home/u\x00PATH=/home/u/.nvm/versions/node/v22/bin:/usr/bin\x00") // the user's shell
	add(10, 1, 1000, "PATH=/bin\x00")
	if got := ancestorPath(1000, proc, 30); got != "/home/u/.nvm/versions/node/v22/bin:/usr/bin" {
		t.Errorf("ancestorPath = %q", got)
	}
	if got := ancestorPath(2000, proc, 30); got != "" {
		t.Errorf("ancestorPath of another user = %q, want none", got)
	}
}
