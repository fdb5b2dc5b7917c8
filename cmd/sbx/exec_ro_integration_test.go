package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 18: an sbx exec request may name extra read-only paths ("ro"),
// e.g. an agent installed outside /usr, but only inside the directories
// the harness allows with --ro-root (the model fills the request, the
// harness the flags). Inside them they are checked as the workspace is:
// the home, its ancestors, /, a kernel interface, a missing or relative
// path are rejected and nothing runs.
func TestExecReadOnlyPaths(t *testing.T) {
	b := newBox(t)
	dir := b.tempDir()
	tool := filepath.Join(dir, "tool")
	writeFile(t, tool, "#!/bin/sh\necho tool ran\n", 0o755)
	chownToUser(t, tool)
	root := []string{"--ro-root", dir}

	// Without ro the tool is not there (control), with it it runs and is
	// read-only.
	b.exec(b.req([]string{tool})).wantExited(t, 127)
	run := b.exec(b.req([]string{tool}, "ro", []string{dir}), root...)
	run.wantExited(t, 0)
	if run.res.Output != "tool ran\n" {
		t.Errorf("ro tool: output %q", run.res.Output)
	}
	// A file alone, read-only: readable, not writable (the host's own
	// file, which its owner can write outside).
	run = b.exec(b.req([]string{"sh", "-c", `cat "$0"; echo x >> "$0" || echo refused`, tool}, append([]any{"ro", []string{tool}}, shell...)...), root...)
	run.wantExited(t, 0)
	if want := "#!/bin/sh\necho tool ran\nrefused\n"; !strings.HasPrefix(run.res.Output, want) || !strings.Contains(run.res.Output, "Read-only file system") {
		t.Errorf("ro file: output %q, want %q and EROFS", run.res.Output, want)
	}
	if data, _ := os.ReadFile(tool); string(data) != "#!/bin/sh\necho tool ran\n" {
		t.Errorf("the ro file changed on the host: %q", data)
	}

	home := hostHome(t)
	for _, c := range []struct {
		name  string
		ro    any
		roots []string
		want  string
	}{
		{"home", []string{home}, []string{"/"}, "is your home directory"},
		{"root", []string{"/"}, []string{"/"}, "the whole host cannot be mounted"},
		{"proc", []string{"/proc/sys"}, []string{"/"}, "a kernel interface"},
		{"state dir", []string{stateRoot}, []string{"/"}, "sbx's own state directory"},
		{"missing", []string{filepath.Join(dir, "nope")}, []string{dir}, "does not exist"},
		{"relative", []string{"tool"}, []string{dir}, "is not an absolute path"},
		{"not an array", dir, []string{dir}, "ro must be an array of strings"},
	} {
		if c.name == "home" && filepath.Dir(home) != "/" {
			b.exec(b.req([]string{tool}, "ro", []string{filepath.Dir(home)}), "--ro-root", "/").wantRejected(t, "an ancestor of your home directory")
		}
		t.Run(c.name, func(t *testing.T) {
			b := b.in(t)
			var flags []string
			for _, r := range c.roots {
				flags = append(flags, "--ro-root", r)
			}
			b.exec(b.req([]string{tool}, "ro", c.ro), flags...).wantRejected(t, c.want)
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); err == nil {
		t.Error("a file was created in the ro directory")
	}
}

// TestExecReadOnlyScope (issue 25): a request's ro paths must lie inside
// a --ro-root of the harness, judged by identity: without --ro-root no ro
// path is accepted; another directory (another workspace), the home's
// ~/.ssh, a symbolic link inside the root that leads out of it and a
// missing path outside are all refused with the same message, and nothing
// runs. The control: the same paths run once the harness names their
// directory as a root.
func TestExecReadOnlyScope(t *testing.T) {
	b := newBox(t)
	allowed := b.tempDir()
	other := b.tempDir()
	tool := filepath.Join(other, "tool")
	writeFile(t, tool, "#!/bin/sh\necho other ran\n", 0o755)
	chownToUser(t, tool)
	if err := os.Symlink(other, filepath.Join(allowed, "link")); err != nil {
		t.Fatal(err)
	}
	const outside = "is outside the directories the harness allows (sbx exec --ro-root)"
	b.exec(b.req([]string{tool}, "ro", []string{other})).wantRejected(t, "--ro-root DIR")
	b.exec(b.req([]string{tool}, "ro", []string{other}), "--ro-root", allowed).wantRejected(t, outside)
	b.exec(b.req([]string{tool}, "ro", []string{tool}), "--ro-root", allowed).wantRejected(t, outside)
	b.exec(b.req([]string{tool}, "ro", []string{filepath.Join(other, "missing")}), "--ro-root", allowed).wantRejected(t, outside)
	b.exec(b.req([]string{tool}, "ro", []string{filepath.Join(hostHome(t), ".ssh")}), "--ro-root", allowed).wantRejected(t, outside)
	b.exec(b.req([]string{filepath.Join(allowed, "link", "tool")}, "ro", []string{filepath.Join(allowed, "link")}), "--ro-root", allowed).wantRejected(t, "passes through a symbolic link")
	// A relative root is the harness's usage error: exit 125, no result.
	if r, _ := b.execProc(b.req([]string{tool}), "--ro-root", "rel/dir"); r.code != exitSbxError || r.stdout != "" || !strings.Contains(r.stderr, "--ro-root \"rel/dir\": want an absolute path") {
		t.Errorf("--ro-root rel/dir: want 125 and the reason\n%v", r)
	}
	// Control: with other as a root, the same request runs.
	run := b.exec(b.req([]string{tool}, "ro", []string{other}), "--ro-root", allowed, "--ro-root", other)
	run.wantExited(t, 0)
	if run.res.Output != "other ran\n" {
		t.Errorf("control: output %q", run.res.Output)
	}
}

// TestExecStageAgentDir (issue 25): with staging allowed by the harness,
// pi's staging root is PI_CODING_AGENT_DIR itself: a file beside it (in
// its parent, PI_CODING_AGENT_DIR=.../etc/pi-agent opening .../etc) is not
// staged, nor is anything when the agent dir does not exist; the control,
// a file inside the agent dir, is. Under /var/tmp, outside the /tmp root
// and the workspace.
func TestExecStageAgentDir(t *testing.T) {
	base, err := os.MkdirTemp("/var/tmp", "sbx-agentdir-")
	if err != nil {
		t.Skipf("no /var/tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	agent := filepath.Join(base, "etc", "pi-agent")
	if err := os.MkdirAll(agent, 0o755); err != nil {
		t.Fatal(err)
	}
	inAgent, beside := filepath.Join(agent, "x.mjs"), filepath.Join(base, "etc", "secret.mjs")
	writeFile(t, inAgent, "export default 1\n", 0o644)
	writeFile(t, beside, "export default 2\n", 0o644)
	chownToUser(t, base, filepath.Dir(agent), agent, inAgent, beside)

	b := newBox(t)
	writeFile(t, filepath.Join(b.ws, "pi"), "#!/bin/sh\necho \"$2\"\n", 0o755)
	for _, c := range []struct {
		name, dir, arg string
		staged         bool
	}{
		{"inside", agent, inAgent, true},
		{"beside", agent, beside, false},
		{"missing agent dir", filepath.Join(base, "etc", "missing"), beside, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := b.in(t)
			p := b.startExec(b.req([]string{"./pi", "--extension", c.arg}, "stage", true), opts{env: []string{"PI_CODING_AGENT_DIR=" + c.dir}}, "--allow-stage")
			r := p.wait()
			if r.code != 0 {
				t.Fatalf("sbx exec\n%v", r)
			}
			res := parseResult(t, r.stdout)
			got := strings.TrimSpace(res.Output)
			if staged := strings.Contains(got, "/.sbx-staging/"); staged != c.staged || (!c.staged && got != c.arg) {
				t.Errorf("output %q: staged %v, want %v\n%v", got, staged, c.staged, r)
			}
			if !c.staged && !strings.Contains(r.stderr, "sbx: not staging") {
				t.Errorf("no warning for the refused value\n%v", r)
			}
		})
	}
}

// TestExecReadOnlyScopeSudo: under sudo the ro paths and roots are
// resolved as the invoking user, never as root: a root the user cannot
// reach (inside a root-only directory) rejects the request. The control:
// root itself, without sudo's variables, runs it.
func TestExecReadOnlyScopeSudo(t *testing.T) {
	var sudo deputyMode
	for _, m := range deputyModes(t) {
		if m.name == "sudo" {
			sudo = m
		}
	}
	if sudo.name == "" {
		t.Skip("root's behaviour under sudo")
	}
	b := newBox(t)
	private := t.TempDir()
	if err := os.Chmod(private, 0o700); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(private, "agent")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	tool := filepath.Join(root, "tool")
	writeFile(t, tool, "#!/bin/sh\necho tool ran\n", 0o755)
	req := b.req([]string{tool}, "ro", []string{root})
	p := b.startExec(req, opts{env: sudo.env}, "--ro-root", root)
	r := p.wait()
	if r.code != 0 {
		t.Fatalf("sbx exec under sudo\n%v", r)
	}
	if res := parseResult(t, r.stdout); res.Status != "rejected" || !strings.Contains(res.Error, "--ro-root "+root+": permission denied") {
		t.Errorf("under sudo: want a rejection naming the unreachable root, got %+v", res)
	}
	run := b.exec(req, "--ro-root", root)
	run.wantExited(t, 0)
	if run.res.Output != "tool ran\n" {
		t.Errorf("control as root: output %q", run.res.Output)
	}
}
