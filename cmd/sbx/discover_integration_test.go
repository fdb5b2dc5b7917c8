package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/internal/sbxtest"
)

// Issue 18: an agent installed where users install agents (npm -g under
// nvm) is found and its installation shown read-only; without discovery
// the same command is not found (127) and sbx says where it is.

// fakeNvm lays out an nvm version directory under home, as `npm install
// -g` leaves it: bin/node (the host's node, hard-linked or, across file
// systems, symlinked), lib/node_modules/NAME with a `#!/usr/bin/env node`
// script, and bin/NAME a symlink into the package. It returns the
// version directory.
func fakeNvm(t *testing.T, home, version, name string, uid, gid int) string {
	t.Helper()
	prefix := filepath.Join(home, ".nvm", "versions", "node", version)
	pkg := filepath.Join(prefix, "lib", "node_modules", name)
	mkdir(t, filepath.Join(prefix, "bin"))
	mkdir(t, filepath.Join(pkg, "bin"))
	node := filepath.Join(prefix, "bin", "node")
	if err := os.Link("/usr/bin/node", node); err != nil {
		if err := os.Symlink("/usr/bin/node", node); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(pkg, "package.json"), fmt.Sprintf(`{"name":%q}`, name), 0o644)
	writeFile(t, filepath.Join(pkg, "bin", "cli.js"), "#!/usr/bin/env node\n"+
		`console.log("agent", process.execPath, require("../package.json").name, process.env.PATH.split(":")[0]);`+"\n"+
		`if (process.argv[2]) { try { require("fs").writeFileSync(process.argv[2], "x"); console.log("wrote"); } catch (e) { console.log(e.code); } }`+"\n", 0o755)
	if err := os.Symlink("../lib/node_modules/"+name+"/bin/cli.js", filepath.Join(prefix, "bin", name)); err != nil {
		t.Fatal(err)
	}
	// Every directory from home down is the user's, as nvm makes it.
	err := filepath.Walk(filepath.Join(home, ".nvm"), func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == node {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		t.Fatal(err)
	}
	return prefix
}

func requireNode(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/node"); err != nil {
		sbxtest.Skip(t, sbxtest.Node, "needs /usr/bin/node (.ci/deps.sh installs nodejs)")
	}
}

// The command is on no PATH of the sandbox, only in the user's nvm: found
// as the user's own (root with HOME, or rootless), with the node of its
// prefix; --no-discover gives 127 and names the flag; a command that lies
// in the home itself is never shown.
func TestDiscoverNvmAgent(t *testing.T) {
	requireNode(t)
	b := newBox(t)
	home := b.tempDir()
	uid, gid := os.Getuid(), os.Getgid()
	if rootless() {
		uid, gid = asUser.uid, asUser.gid
	}
	name := uniqueName(t, "agent")
	prefix := fakeNvm(t, home, "v20.9.0", name, uid, gid)
	env := []string{"HOME=" + home}

	// Control: the host runs it.
	if r := b.host(opts{env: []string{"PATH=" + filepath.Join(prefix, "bin") + ":/usr/bin:/bin"}}, filepath.Join(prefix, "bin", name)); r.code != 0 || !strings.HasPrefix(r.stdout, "agent ") {
		t.Fatalf("on the host: %v", r)
	}

	r := b.runOpts(opts{env: env}, "--", name)
	want := fmt.Sprintf("agent %s %s %s\n", filepath.Join(prefix, "bin", "node"), name, filepath.Join(prefix, "bin"))
	if r.code != 0 || r.stdout != want {
		t.Fatalf("discovered: got %v, want stdout %q", r, want)
	}
	if n := strings.Count(r.stderr, "sbx: "+name+" is not in the sandbox but installed at "+filepath.Join(prefix, "bin", name)+": showing "+prefix+" read-only"); n != 1 {
		t.Errorf("want the discovery said once, got %d: %q", n, r.stderr)
	}
	// Read-only: the program cannot change its installation.
	r = b.runOpts(opts{env: env}, "--", name, filepath.Join(prefix, "lib", "x"))
	if r.code != 0 || !strings.HasSuffix(r.stdout, "\nEROFS\n") {
		t.Errorf("writing into the shown prefix: got %v, want EROFS", r)
	}
	if r := b.host(opts{}, filepath.Join(prefix, "bin", name), filepath.Join(prefix, "lib", "y")); !strings.HasSuffix(r.stdout, "\nwrote\n") {
		t.Errorf("control, the same write on the host: got %v", r)
	}

	// Without discovery: 127, where it is and the flag.
	r = b.runOpts(opts{env: env}, "--no-discover", "--", name)
	if r.code != 127 || !strings.Contains(r.stderr, "sbx: "+name+" is installed on the host at "+filepath.Join(prefix, "bin", name)) ||
		!strings.Contains(r.stderr, "--ro "+prefix) {
		t.Errorf("--no-discover: got %v, want 127 naming the host path and --ro %s", r, prefix)
	}

	// The home itself is never shown.
	writeFile(t, filepath.Join(home, name+"-home"), "#!/bin/sh\necho home\n", 0o755)
	chownToUser(t, filepath.Join(home, name+"-home"))
	r = b.runOpts(opts{env: append(env, "PATH="+home+":/usr/bin:/bin")}, "--", name+"-home")
	if r.code != 127 || !strings.Contains(r.stderr, "is or contains your home directory") ||
		!strings.Contains(r.stderr, "to show it: --ro "+filepath.Join(home, name+"-home")+" --env PATH="+home+":") {
		t.Errorf("a command in the home: got %v, want 127 saying the home is not shown", r)
	}
}

// Under sudo (SUDO_UID, PATH is sudo's secure_path) the user's nvm is
// found in the user's home; a command found nowhere names secure_path
// and the fix.
func TestDiscoverUnderSudo(t *testing.T) {
	requireNode(t)
	if rootless() {
		t.Skip("sudo is root's")
	}
	requireRoot(t) // creates and acts for another user
	u, err := ensureTestUser("sbx-rootless-test")
	if err != nil {
		t.Fatal(err)
	}
	b := newBox(t)
	if err := os.Chown(b.ws, u.uid, u.gid); err != nil {
		t.Fatal(err)
	}
	name := uniqueName(t, "agent")
	version := "v99.0." + fmt.Sprint(os.Getpid())
	prefix := fakeNvm(t, u.home, version, name, u.uid, u.gid)
	t.Cleanup(func() { os.RemoveAll(prefix) })
	secure := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	env := []string{
		fmt.Sprintf("SUDO_UID=%d", u.uid), fmt.Sprintf("SUDO_GID=%d", u.gid), "SUDO_USER=" + u.name,
		"PATH=" + secure, "HOME=/root",
	}
	r := b.runOpts(opts{env: env}, "--", name)
	want := fmt.Sprintf("agent %s %s %s\n", filepath.Join(prefix, "bin", "node"), name, filepath.Join(prefix, "bin"))
	if r.code != 0 || r.stdout != want {
		t.Fatalf("under sudo: got %v, want stdout %q", r, want)
	}
	r = b.runOpts(opts{env: env}, "--no-discover", "--", name)
	if r.code != 127 || !strings.Contains(r.stderr, "--ro "+prefix) {
		t.Errorf("under sudo, --no-discover: got %v, want 127 naming --ro %s", r, prefix)
	}
	r = b.runOpts(opts{env: env}, "--", name+"-nowhere")
	hint := "sbx: under sudo, PATH is sudo's secure_path (" + secure + "), not yours: run sbx with sudo --preserve-env=PATH, or pass yours with --env PATH=\"$PATH\""
	if r.code != 127 || !strings.Contains(r.stderr, hint) {
		t.Errorf("not found under sudo: got %v, want 127 and %q", r, hint)
	}
	// Control: with the user's PATH passed, no sudo hint.
	r = b.runOpts(opts{env: env}, "--env", "PATH="+secure, "--", name+"-nowhere")
	if r.code != 127 || strings.Contains(r.stderr, "secure_path") {
		t.Errorf("--env PATH under sudo: got %v, want 127 without the sudo hint", r)
	}
}
