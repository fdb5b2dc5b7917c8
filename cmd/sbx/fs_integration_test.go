package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// erofs is what touch(1) says when the kernel refuses with EROFS.
func erofs(path string) string {
	return "touch: cannot touch '" + path + "': Read-only file system\n"
}

// enoent is what ls(1) says for a path that does not exist.
func enoent(path string) string {
	return "ls: cannot access '" + path + "': No such file or directory\n"
}

// TestReadOnlySystem: the system directories, the root and the workspace
// (without --write) refuse writes with EROFS, while the same write works on
// the host (or with --write for the workspace).
func TestReadOnlySystem(t *testing.T) {
	b := newBox(t)
	name := uniqueName(t, "sbx-it-probe")
	for _, dir := range []string{"/usr", "/etc", "/", "/usr/local/bin", b.ws} {
		t.Run(dir, func(t *testing.T) {
			t.Parallel()
			b := b.in(t)
			p := filepath.Join(dir, name)
			r := b.run("--", "touch", p)
			own, denied, hints := splitReport(r.stderr)
			wantHints := 0
			if dir == b.ws {
				wantHints = 1
			}
			if r.code != 1 || r.stdout != "" || own != erofs(p) || !slices.Equal(denied, reported([]string{"open " + p + " touch"})) || hints != reportedCount(wantHints) {
				t.Errorf("touch %s in the sandbox: want exit 1 and EROFS, reported (%d --write hint)\n%v", p, wantHints, r)
			}
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("%s exists on the host after the refused write", p)
			}
			// Control: the same write succeeds outside the read-only view.
			// An ordinary user cannot write the system directories on the
			// host: there the control is that it is refused by their
			// modes (EACCES), not by a read-only mount.
			t.Cleanup(func() { os.Remove(p) })
			var c result
			if dir == b.ws {
				c = b.run("--write", "--", "touch", p)
			} else {
				c = b.host(opts{}, "touch", p)
			}
			if rootless() && dir != b.ws {
				if want := "touch: cannot touch '" + p + "': Permission denied\n"; c.code != 1 || c.stderr != want {
					t.Errorf("control: touch %s as %s on the host: want %q\n%v", p, asUser.name, want, c)
				}
				return
			}
			if c.code != 0 {
				t.Fatalf("control: touch %s: want success\n%v", p, c)
			}
			if _, err := os.Lstat(p); err != nil {
				t.Errorf("control: %s not on the host after touch: %v", p, err)
			}
		})
	}
}

func TestWorkspaceWrite(t *testing.T) {
	b := newBox(t)
	writeFile(t, filepath.Join(b.ws, "in.txt"), "from host\n", 0o644)
	// Read-only by default, but readable.
	if r := b.run("--", "cat", "in.txt"); r.code != 0 || r.stdout != "from host\n" {
		t.Errorf("cat in.txt in the read-only workspace\n%v", r)
	}
	r := b.run("--", "sh", "-c", "echo x > out.txt")
	own, denied, hints := splitReport(r.stderr)
	if r.code != 2 || own != "sh: 1: cannot create out.txt: Read-only file system\n" || !slices.Equal(denied, reported([]string{"open " + filepath.Join(b.ws, "out.txt") + " sh"})) || hints != reportedCount(1) {
		t.Errorf("write in the read-only workspace: want EROFS, reported, with the --write hint\n%v", r)
	}
	for _, flag := range []string{"--write", "-w"} {
		out := filepath.Join(b.ws, "out"+flag+".txt")
		r := b.run(flag, "--", "sh", "-c", "echo hello > "+shellQuote(out)+" && mkdir -p sub/dir")
		if r.code != 0 || r.stderr != "" {
			t.Errorf("%s: write in the workspace\n%v", flag, r)
		}
		if data, err := os.ReadFile(out); err != nil || string(data) != "hello\n" {
			t.Errorf("%s: %s on the host = %q, %v; want \"hello\\n\"", flag, out, data, err)
		}
		if fi, err := os.Stat(filepath.Join(b.ws, "sub", "dir")); err != nil || !fi.IsDir() {
			t.Errorf("%s: sub/dir not created on the host: %v", flag, err)
		}
	}
}

// TestWritablePlaces: /tmp, /dev/shm and $HOME are writable; /tmp is
// private (a host file in /tmp is not there, and nothing leaks out).
func TestWritablePlaces(t *testing.T) {
	b := newBox(t)
	name := uniqueName(t, "sbx-it-tmp")
	hostTmp := filepath.Join("/tmp", name)
	writeFile(t, hostTmp, "host\n", 0o644)
	t.Cleanup(func() { os.Remove(hostTmp) })
	inside := filepath.Join("/tmp", name+"-inside")
	t.Cleanup(func() { os.Remove(inside) })

	r := b.run("--", "sh", "-c", `echo a > `+inside+` && cat `+inside+` && echo b > "$HOME/f" && cat "$HOME/f" && echo c > /dev/shm/f && cat /dev/shm/f`)
	if r.code != 0 || r.stdout != "a\nb\nc\n" || r.stderr != "" {
		t.Errorf("writes to /tmp, $HOME, /dev/shm\n%v", r)
	}
	if _, err := os.Stat(inside); err == nil {
		t.Errorf("%s written in the sandbox's /tmp appeared on the host", inside)
	}
	if r := b.run("--", "ls", hostTmp); r.code != 2 || r.stderr != enoent(hostTmp) {
		t.Errorf("host's %s visible in the sandbox's /tmp\n%v", hostTmp, r)
	}
	if r := b.host(opts{}, "ls", hostTmp); r.code != 0 {
		t.Errorf("control: ls %s on the host\n%v", hostTmp, r)
	}
}

// TestHostPathsInvisible: the host home, /run, /var and /home are not in
// the sandbox, while they are on the host.
func TestHostPathsInvisible(t *testing.T) {
	b := newBox(t)
	hostHome := hostHome(t)
	homeFile := filepath.Join(hostHome, uniqueName(t, "sbx-it-home"))
	writeFile(t, homeFile, "secret\n", 0o600)
	chownToUser(t, homeFile)
	t.Cleanup(func() { os.Remove(homeFile) })
	paths := []string{"/run", "/var", stateRoot, homeFile}
	// A user's home under /home makes /home a directory of the sandbox
	// too, holding the sandbox home's mount point alone.
	homeParent := filepath.Dir(hostHome) == "/home"
	if _, err := os.Stat("/home"); err == nil && !homeParent {
		paths = append(paths, "/home")
	}
	if _, err := os.Stat("/var/run/docker.sock"); err == nil {
		paths = append(paths, "/var/run/docker.sock")
	}
	for _, p := range paths {
		t.Run(p, func(t *testing.T) {
			t.Parallel()
			b := b.in(t)
			if r := b.run("--", "ls", "-d", p); r.code != 2 || r.stdout != "" || r.stderr != enoent(p) {
				t.Errorf("ls -d %s in the sandbox: want ENOENT\n%v", p, r)
			}
			if r := b.host(opts{}, "ls", "-d", p); r.code != 0 {
				t.Errorf("control: ls -d %s on the host\n%v", p, r)
			}
		})
	}
	if homeParent {
		t.Run("/home", func(t *testing.T) {
			t.Parallel()
			b := b.in(t)
			want := filepath.Base(hostHome) + "\n"
			if r := b.run("--", "ls", "-A", "/home"); r.code != 0 || r.stdout != want || r.stderr != "" {
				t.Errorf("ls -A /home in the sandbox: want only the sandbox home's mount point %q\n%v", want, r)
			}
			c := b.host(opts{}, "ls", "-A", "/home")
			if c.code != 0 || !strings.Contains(c.stdout, want) {
				t.Errorf("control: ls -A /home on the host\n%v", c)
			}
			if c.stdout == want {
				t.Logf("the host's /home holds only %s: nothing else to hide", want)
			}
		})
	}
}

// TestMaskedFiles: host secrets under visible directories read as empty
// (masked with /dev/null), while they have content on the host.
func TestMaskedFiles(t *testing.T) {
	b := newBox(t)
	for _, p := range []string{"/etc/shadow", "/etc/gshadow", "/proc/kallsyms"} {
		t.Run(p, func(t *testing.T) {
			t.Parallel()
			b := b.in(t)
			c := b.host(opts{}, "cat", p)
			if rootless() && c.code == 1 && c.stderr == "cat: "+p+": Permission denied\n" {
				// The user may not read it outside (EACCES); inside it
				// reads as empty, not refused: masked. Its content is
				// there all the same.
				if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
					t.Skipf("%s is not a non-empty file on this host (%v)", p, err)
				}
			} else if c.code != 0 || c.stdout == "" {
				t.Skipf("%s is not a readable, non-empty file on this host\n%v", p, c)
			}
			if r := b.run("--", "cat", p); r.code != 0 || r.stdout != "" || r.stderr != "" {
				t.Errorf("cat %s in the sandbox: want empty content (masked)\n%v", p, r)
			}
		})
	}
}

// TestExtraMounts: --ro and --rw show host paths at their own path.
func TestExtraMounts(t *testing.T) {
	b := newBox(t)
	ro, rw := b.tempDir(), b.tempDir()
	roFile := filepath.Join(b.tempDir(), "single.txt")
	writeFile(t, filepath.Join(ro, "f"), "ro-data\n", 0o644)
	writeFile(t, roFile, "single\n", 0o644)
	chownToUser(t, roFile) // the user's own file, shown read-only

	t.Run("not mounted", func(t *testing.T) {
		t.Parallel()
		b := b.in(t)
		p := filepath.Join(ro, "f")
		if r := b.run("--", "ls", p); r.code != 2 || r.stderr != enoent(p) {
			t.Errorf("without --ro, %s is visible\n%v", p, r)
		}
	})
	t.Run("ro read", func(t *testing.T) {
		t.Parallel()
		b := b.in(t)
		if r := b.run("--ro", ro, "--", "cat", filepath.Join(ro, "f")); r.code != 0 || r.stdout != "ro-data\n" {
			t.Errorf("--ro %s: cat f\n%v", ro, r)
		}
	})
	t.Run("ro write", func(t *testing.T) {
		t.Parallel()
		b := b.in(t)
		p := filepath.Join(ro, "new")
		r := b.run("--ro", ro, "--", "touch", p)
		own, denied, hints := splitReport(r.stderr)
		if r.code != 1 || own != erofs(p) || !slices.Equal(denied, reported([]string{"open " + p + " touch"})) || hints != 0 {
			t.Errorf("--ro %s: touch: want EROFS, reported\n%v", ro, r)
		}
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s created on the host through --ro", p)
		}
		// Control: the directory is writable on the host.
		if c := b.host(opts{}, "touch", filepath.Join(ro, "host-new")); c.code != 0 {
			t.Errorf("control: touch in %s on the host\n%v", ro, c)
		}
	})
	t.Run("ro file", func(t *testing.T) {
		t.Parallel()
		b := b.in(t)
		r := b.run("--ro", roFile, "--", "sh", "-c", "cat "+roFile+"; echo more >> "+roFile)
		own, denied, _ := splitReport(r.stderr)
		if r.code != 2 || r.stdout != "single\n" || own != "sh: 1: cannot create "+roFile+": Read-only file system\n" || !slices.Equal(denied, reported([]string{"open " + roFile + " sh"})) {
			t.Errorf("--ro FILE: read works, append gets EROFS, reported\n%v", r)
		}
		if data, _ := os.ReadFile(roFile); string(data) != "single\n" {
			t.Errorf("%s changed through --ro: %q", roFile, data)
		}
	})
	t.Run("rw write", func(t *testing.T) {
		t.Parallel()
		b := b.in(t)
		p := filepath.Join(rw, "new")
		if r := b.run("--rw", rw, "--", "sh", "-c", "echo rw-data > "+p); r.code != 0 || r.stderr != "" {
			t.Errorf("--rw %s: write\n%v", rw, r)
		}
		if data, err := os.ReadFile(p); err != nil || string(data) != "rw-data\n" {
			t.Errorf("--rw: %s on the host = %q, %v", p, data, err)
		}
	})
	t.Run("relative", func(t *testing.T) {
		t.Parallel()
		b := b.in(t)
		// A relative --ro is resolved against the caller's cwd.
		r := b.runOpts(opts{dir: ro}, "--workspace", b.ws, "--ro", ".", "--", "cat", filepath.Join(ro, "f"))
		if r.code != 0 || r.stdout != "ro-data\n" {
			t.Errorf("--ro . from %s\n%v", ro, r)
		}
	})
}

// TestHome: $HOME is writable, is not the host home, and is backed by the
// persistent sbx home, --home DIR, or a throwaway dir.
func TestHome(t *testing.T) {
	b := newBox(t)
	t.Run("default sbx home", func(t *testing.T) {
		t.Parallel()
		b := b.in(t)
		if r := b.run("--", "sh", "-c", `echo persist > "$HOME/marker"`); r.code != 0 || r.stderr != "" {
			t.Fatalf("write $HOME/marker\n%v", r)
		}
		p := filepath.Join(b.sbxHome(b.data), "marker")
		if data, err := os.ReadFile(p); err != nil || string(data) != "persist\n" {
			t.Errorf("$HOME/marker is not at $XDG_DATA_HOME/sbx/homes/<workspace> on the host: %q, %v", data, err)
		}
		if fi, err := os.Stat(filepath.Dir(p)); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("sbx home %s: want mode 0700: %v %v", filepath.Dir(p), fi.Mode(), err)
		}
		// Persistent: the next run sees it.
		if r := b.run("--", "sh", "-c", `cat "$HOME/marker"`); r.code != 0 || r.stdout != "persist\n" {
			t.Errorf("second run: $HOME/marker\n%v", r)
		}
	})
	t.Run("default without XDG_DATA_HOME", func(t *testing.T) {
		t.Parallel()
		b := b.in(t)
		home := b.tempDir()
		r := b.runOpts(opts{env: []string{"XDG_DATA_HOME", "HOME=" + home}}, "--", "sh", "-c", `echo x > "$HOME/marker"`)
		if r.code != 0 || r.stderr != "" {
			t.Fatalf("write $HOME/marker\n%v", r)
		}
		p := filepath.Join(b.sbxHome(filepath.Join(home, ".local", "share")), "marker")
		if data, err := os.ReadFile(p); err != nil || string(data) != "x\n" {
			t.Errorf("$HOME/marker not at ~/.local/share/sbx/homes/<workspace>/marker: %q, %v", data, err)
		}
		if _, err := os.Stat(filepath.Join(home, "marker")); err == nil {
			t.Errorf("the write went to the host home %s", home)
		}
	})
	t.Run("--home DIR", func(t *testing.T) {
		t.Parallel()
		b := b.in(t)
		dir, data := b.tempDir(), b.tempDir()
		writeFile(t, filepath.Join(dir, "seed"), "seed\n", 0o644)
		r := b.runOpts(opts{env: []string{"XDG_DATA_HOME=" + data}}, "--home", dir, "--", "sh", "-c", `cat "$HOME/seed" && echo hi > "$HOME/h.txt"`)
		if r.code != 0 || r.stdout != "seed\n" {
			t.Errorf("--home %s\n%v", dir, r)
		}
		if data, err := os.ReadFile(filepath.Join(dir, "h.txt")); err != nil || string(data) != "hi\n" {
			t.Errorf("--home: h.txt on the host = %q, %v", data, err)
		}
		if _, err := os.Stat(filepath.Join(data, "sbx")); err == nil {
			t.Errorf("--home DIR still created the default sbx home")
		}
	})
	t.Run("--home tmp", func(t *testing.T) {
		t.Parallel()
		b := b.in(t)
		// The leftover check of run() also checks that the throwaway
		// home is removed.
		data := b.tempDir()
		o := opts{env: []string{"XDG_DATA_HOME=" + data}}
		if r := b.runOpts(o, "--home", "tmp", "--", "sh", "-c", `echo x > "$HOME/x" && cat "$HOME/x"`); r.code != 0 || r.stdout != "x\n" {
			t.Errorf("--home tmp: write $HOME/x\n%v", r)
		}
		if r := b.runOpts(o, "--home", "tmp", "--", "sh", "-c", `ls -A "$HOME"`); r.code != 0 || r.stdout != "" {
			t.Errorf("--home tmp: a second throwaway home is not empty\n%v", r)
		}
		if _, err := os.Stat(filepath.Join(data, "sbx")); err == nil {
			t.Errorf("--home tmp still created the default sbx home")
		}
	})
	t.Run("HOME set", func(t *testing.T) {
		t.Parallel()
		b := b.in(t)
		r := b.run("--", "sh", "-c", `test -n "$HOME" && test -d "$HOME" && test -w "$HOME" && echo ok`)
		if r.code != 0 || r.stdout != "ok\n" {
			t.Errorf("$HOME is not a writable directory\n%v", r)
		}
	})
}

// TestWorkingDirectory: the caller's cwd when it lies in the workspace,
// else the workspace root.
func TestWorkingDirectory(t *testing.T) {
	b := newBox(t)
	sub := filepath.Join(b.ws, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	outside := b.tempDir()
	for _, c := range []struct {
		name string
		dir  string
		args []string
		want string
	}{
		{"workspace is cwd", b.ws, nil, b.ws},
		{"cwd below workspace", sub, []string{"--workspace", b.ws}, sub},
		{"cwd outside workspace", outside, []string{"--workspace", b.ws}, b.ws},
		{"relative workspace", filepath.Join(b.ws, "a"), []string{"--workspace", "b"}, sub},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := b.in(t)
			r := b.runOpts(opts{dir: c.dir}, append(c.args, "--", "pwd")...)
			if r.code != 0 || strings.TrimSpace(r.stdout) != c.want {
				t.Errorf("pwd from %s with %q: want %s\n%v", c.dir, c.args, c.want, r)
			}
		})
	}
}
