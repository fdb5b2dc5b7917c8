package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// atomicSave replaces the file $1 the way editors and agents save: a
// temporary file beside it, renamed over it (os.replace).
const atomicSave = `import os, sys
p = sys.argv[1]
print(open(p).read().strip())
with open(p + ".tmp", "w") as f:
    f.write(sys.argv[2] + "\n")
os.replace(p + ".tmp", p)
print("saved")`

// Issue 18: a single file given with --rw in the writable workspace is
// the workspace's own and survives an atomic save (rename over it). One in
// the home is copied into the run's own dir, bound at its place for this
// run alone, and copied back: an edit reaches the host after the run; a
// save by rename gets EBUSY there, as for a bound file (issue 25: a copy
// in the home shared by the workspace's runs was readable by the others).
func TestRWFileAtomicSave(t *testing.T) {
	b := newBox(t)
	home := b.tempDir()
	conf := filepath.Join(home, ".agent.json")
	writeFile(t, conf, "host-1\n", 0o640)
	chownToUser(t, conf)
	env := opts{env: []string{"HOME=" + home}}

	t.Run("home", func(t *testing.T) {
		b := b.in(t)
		r := b.runOpts(env, "--rw", conf, "--", "sh", "-c", `cat "$1" && echo sandbox-1 > "$1"`, "sh", conf)
		if r.code != 0 || r.stdout != "host-1\n" {
			t.Fatalf("edit of --rw %s: %v", conf, r)
		}
		data, err := os.ReadFile(conf)
		fi, _ := os.Stat(conf)
		if err != nil || string(data) != "sandbox-1\n" || fi.Mode().Perm() != 0o640 {
			t.Errorf("host file after the run: %q mode %v (%v), want the sandbox's content, mode 0640", data, fi.Mode(), err)
		}
		// A file the program did not change is left alone.
		before, _ := os.Stat(conf)
		if r := b.runOpts(env, "--rw", conf, "--", "cat", conf); r.code != 0 || r.stdout != "sandbox-1\n" {
			t.Errorf("reading --rw %s: %v", conf, r)
		}
		if after, _ := os.Stat(conf); !os.SameFile(before, after) || after.ModTime() != before.ModTime() {
			t.Errorf("an unchanged file was rewritten")
		}
		// A save by rename over the copy is refused (it is a mount
		// point), and the host file is kept.
		r = b.runOpts(env, "--rw", conf, "--", "python3", "-c", atomicSave, conf, "sandbox-x")
		if r.code != 1 || !strings.Contains(r.stderr, "Device or resource busy") {
			t.Errorf("atomic save of a copied file: got %v, want EBUSY", r)
		}
		if data, _ := os.ReadFile(conf); string(data) != "sandbox-1\n" {
			t.Errorf("host file after a refused save: %q", data)
		}
	})

	t.Run("changed on both sides", func(t *testing.T) {
		b := b.in(t)
		writeFile(t, conf, "host-a\n", 0o640)
		chownToUser(t, conf)
		p := b.start(env, "run", "--rw", conf, "--", "sh", "-c", `echo ready; while [ ! -e go ]; do sleep 0.05; done; echo sandbox-b > "$1"`, "sh", conf)
		p.waitLine("ready")
		writeFile(t, conf, "host-b\n", 0o640) // the host changes it meanwhile
		chownToUser(t, conf)
		writeFile(t, filepath.Join(b.ws, "go"), "", 0o644)
		r := p.wait()
		if r.code != 0 || !strings.Contains(r.stderr, "sbx: --rw "+conf+": changed on the host during the run too: kept the host's; the sandbox's version is ") {
			t.Errorf("both changed: got %v, want the host's kept and the sandbox's named", r)
		}
		if data, _ := os.ReadFile(conf); string(data) != "host-b\n" {
			t.Errorf("host file: %q, want the host's own change", data)
		}
	})

	t.Run("symlink planted", func(t *testing.T) {
		b := b.in(t)
		// The program tries to swap the file for a link to a file it
		// cannot read: the copy is a mount point, so it cannot, and the
		// host file stays as it was.
		writeFile(t, conf, "host-s\n", 0o640)
		chownToUser(t, conf)
		r := b.runOpts(env, "--rw", conf, "--", "sh", "-c", `rm -f "$1" && ln -s /etc/shadow "$1"`, "sh", conf)
		if r.code != 1 || !strings.Contains(r.stderr, "Device or resource busy") {
			t.Errorf("replacing the copy by a symlink: got %v, want EBUSY", r)
		}
		if fi, err := os.Lstat(conf); err != nil || !fi.Mode().IsRegular() || readFile(t, conf) != "host-s\n" {
			t.Errorf("host file after a planted symlink: %v %v", fi, err)
		}
	})

	t.Run("copy-back refused", func(t *testing.T) {
		b := b.in(t)
		// The file's directory is replaced by a symlink during the run:
		// copy-back refuses it, and the sandbox's version is kept in
		// the user's data dir, not lost with the run dir.
		sub := filepath.Join(home, "sub")
		mkdir(t, sub)
		f := filepath.Join(sub, ".cfg")
		writeFile(t, f, "host-k\n", 0o600)
		chownToUser(t, sub, f)
		p := b.start(env, "run", "--rw", f, "--", "sh", "-c", `echo sandbox-k > "$1"; echo ready; while [ ! -e go-k ]; do sleep 0.05; done`, "sh", f)
		p.waitLine("ready")
		if err := os.Rename(sub, sub+".moved"); err != nil {
			t.Fatal(err)
		}
		symlink(t, sub+".moved", sub)
		writeFile(t, filepath.Join(b.ws, "go-k"), "", 0o644)
		r := p.wait()
		_, kept, ok := strings.Cut(r.stderr, "the sandbox's version is kept in ")
		kept, _, _ = strings.Cut(kept, ")")
		if r.code != exitSbxError || !ok || !strings.HasPrefix(kept, filepath.Join(home, ".local/share/sbx/kept")+"/") {
			t.Fatalf("copy-back into a replaced directory: got %v, want 125 naming the kept copy", r)
		}
		if got := readFile(t, kept); got != "sandbox-k\n" {
			t.Errorf("kept copy: %q", got)
		}
		if got := readFile(t, filepath.Join(sub+".moved", ".cfg")); got != "host-k\n" {
			t.Errorf("host file written through the symlink: %q", got)
		}
	})

	t.Run("workspace", func(t *testing.T) {
		b := b.in(t)
		envrc := filepath.Join(b.ws, ".envrc")
		writeFile(t, envrc, "host-2\n", 0o644)
		chownToUser(t, envrc)
		r := b.run("-w", "--rw", envrc, "--", "python3", "-c", atomicSave, envrc, "sandbox-2")
		if r.code != 0 || r.stdout != "host-2\nsaved\n" {
			t.Fatalf("atomic save of --rw %s: %v", envrc, r)
		}
		if data, _ := os.ReadFile(envrc); string(data) != "sandbox-2\n" {
			t.Errorf("host file after the run: %q", data)
		}
	})

	t.Run("bound elsewhere", func(t *testing.T) {
		b := b.in(t)
		other := filepath.Join(b.tempDir(), "other.json")
		writeFile(t, other, "host-3\n", 0o644)
		chownToUser(t, other)
		r := b.runOpts(env, "--rw", other, "--", "python3", "-c", atomicSave, other, "sandbox-3")
		if r.code != 1 || !strings.Contains(r.stderr, "Device or resource busy") {
			t.Errorf("atomic save of a bound file: got %v, want EBUSY", r)
		}
	})
}
