package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The host side as a deputy (issue #13): sbx's own code runs on the host,
// as root under sudo, on paths the sandboxed program can change (the
// workspace with --write, the sbx home, the staging dir). Each test runs a
// real attack from inside a real sandbox and asserts the host is
// untouched, with a control that the legitimate operation still works. As
// root, every attack runs twice: as plain root and as root with SUDO_UID
// (what sudo sets; the run is then the user's); in the as-user mode, once,
// rootless.

// deputyMode is one way sbx is started.
type deputyMode struct {
	name string
	env  []string // added to sbx's environment
	uid  int      // who owns the workspace (-1: the box's default)
}

func deputyModes(t *testing.T) []deputyMode {
	if rootless() {
		return []deputyMode{{name: "rootless", uid: -1}}
	}
	requireRoot(t) // creates and acts for another user
	u, err := ensureTestUser("sbx-rootless-test")
	if err != nil {
		t.Fatal(err)
	}
	return []deputyMode{
		{name: "root", uid: -1},
		{name: "sudo", uid: u.uid, env: []string{
			fmt.Sprintf("SUDO_UID=%d", u.uid), fmt.Sprintf("SUDO_GID=%d", u.gid), "SUDO_USER=" + u.name,
		}},
	}
}

// deputyBox is a box whose workspace holds a fake pi (staged like the real
// one: the staging table keys on the name) that appends a line to its
// --session file and then runs $ATTACK with sh.
func deputyBox(t *testing.T, m deputyMode) *box {
	b := newSerialBox(t)
	writeFile(t, filepath.Join(b.ws, "pi"), "#!/bin/sh\necho PLANTED >> \"$2\"\neval \"$ATTACK\"\n", 0o755)
	mkdir(t, filepath.Join(b.ws, "sess"))
	writeFile(t, filepath.Join(b.ws, "sess", "s.jsonl"), "host\n", 0o644)
	made := []string{filepath.Join(b.ws, "pi"), filepath.Join(b.ws, "sess"), filepath.Join(b.ws, "sess", "s.jsonl")}
	chownToUser(t, made...) // the user's project, in the as-user mode
	if m.uid >= 0 {
		for _, p := range append(made, b.ws) {
			if err := os.Chown(p, m.uid, m.uid); err != nil {
				t.Fatal(err)
			}
		}
	}
	return b
}

// target is a root-owned directory outside every sandbox, standing for
// /etc/cron.d or /root/.ssh.
func target(t *testing.T) string {
	d := t.TempDir()
	if err := os.Chmod(filepath.Dir(d), 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func mustBeEmpty(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		t.Errorf("the sandbox wrote %s on the host", filepath.Join(dir, e.Name()))
	}
}

// TestDeputySessionDirSwappedForSymlink: the program replaces the
// directory of its staged --session by a symlink to a host directory; the
// copy-back must not write there.
func TestDeputySessionDirSwappedForSymlink(t *testing.T) {
	for _, m := range deputyModes(t) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			b := deputyBox(t, m)
			dst := target(t)
			attack := "mv sess sess.moved && ln -s " + dst + " sess"
			r := b.runOpts(opts{env: m.env}, "-w", "--env", "ATTACK="+attack, "--", "./pi", "--session", "sess/s.jsonl")
			if r.code != 125 {
				t.Errorf("want 125 (the program succeeded, its session did not come back)\n%v", r)
			}
			mustBeEmpty(t, dst)
			if got := readFile(t, filepath.Join(b.ws, "sess.moved", "s.jsonl")); got != "host\n" {
				t.Errorf("the moved session changed: %q", got)
			}
			if !strings.Contains(r.stderr, "too many levels of symbolic links") && !strings.Contains(r.stderr, "replaced since it was recorded") {
				t.Errorf("the refusal is not reported\n%v", r)
			}
			// The control: the same run without the swap brings the
			// session back.
			b2 := deputyBox(t, m)
			r = b2.runOpts(opts{env: m.env}, "-w", "--env", "ATTACK=true", "--", "./pi", "--session", "sess/s.jsonl")
			if got := readFile(t, filepath.Join(b2.ws, "sess", "s.jsonl")); r.code != 0 || got != "host\nPLANTED\n" {
				t.Errorf("control: session %q\n%v", got, r)
			}
		})
	}
}

// TestDeputyNoFilesBesideSession: a run without --write cannot create
// files in its read-only workspace through copy-back; only the staged
// session comes back.
func TestDeputyNoFilesBesideSession(t *testing.T) {
	for _, m := range deputyModes(t) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			b := deputyBox(t, m)
			attack := `d=$(dirname "$2"); for f in .envrc Makefile .mcp.json new.jsonl; do echo evil > "$d/$f"; done`
			r := b.runOpts(opts{env: m.env}, "--env", "ATTACK="+attack, "--", "./pi", "--session", "sess/s.jsonl")
			if r.code != 0 {
				t.Fatalf("run\n%v", r)
			}
			for _, f := range []string{".envrc", "Makefile", ".mcp.json", "new.jsonl"} {
				mustNotExist(t, filepath.Join(b.ws, "sess", f))
			}
			if got := readFile(t, filepath.Join(b.ws, "sess", "s.jsonl")); got != "host\nPLANTED\n" {
				t.Errorf("control: the staged session did not come back: %q", got)
			}
		})
	}
}

// TestDeputyRaceSwaps: one run keeps swapping the session directory and
// the shared home's staging dir for symlinks to a host directory while
// another run of the same workspace stages and copies back, again and
// again. Nothing may ever land in the host directory.
func TestDeputyRaceSwaps(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	for _, m := range deputyModes(t) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			b := deputyBox(t, m)
			dst := target(t)
			swapper := fmt.Sprintf(`end=$(($(date +%%s)+6)); while [ $(date +%%s) -lt $end ]; do
  mv sess sess.x 2>/dev/null; ln -s %[1]s sess 2>/dev/null; rm -f sess; mv sess.x sess 2>/dev/null
  mv "$HOME/.sbx-staging" "$HOME/.x" 2>/dev/null; ln -s %[1]s "$HOME/.sbx-staging" 2>/dev/null
  rm -f "$HOME/.sbx-staging"; mv "$HOME/.x" "$HOME/.sbx-staging" 2>/dev/null
done`, dst)
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				b.runOpts(opts{env: m.env, timeout: time.Minute}, "-w", "--", "sh", "-c", swapper)
			}()
			time.Sleep(500 * time.Millisecond)
			outcomes := map[int]int{}
			for i := 0; i < 12; i++ {
				r := b.runOpts(opts{env: m.env}, "-w", "--env", "ATTACK=true", "--", "./pi", "--session", "sess/s.jsonl")
				outcomes[r.code]++
			}
			wg.Wait()
			mustBeEmpty(t, dst)
			t.Logf("victim runs by exit status: %v", outcomes)
		})
	}
}

// TestDeputyHomePerWorkspace: what a run plants in its home (a
// ~/.gitconfig with core.fsmonitor) is not in the home of a run for
// another workspace; the same workspace keeps it (the control).
func TestDeputyHomePerWorkspace(t *testing.T) {
	requireRoot(t)
	t.Parallel()
	b := newSerialBox(t)
	other := newSerialBox(t)
	other.data = b.data // the same user's data home
	if r := b.run("--", "sh", "-c", `printf '[core]\n\tfsmonitor = evil\n' > "$HOME/.gitconfig"`); r.code != 0 {
		t.Fatalf("plant\n%v", r)
	}
	if r := other.run("--", "sh", "-c", `test ! -e "$HOME/.gitconfig"`); r.code != 0 {
		t.Errorf("another workspace's run sees the planted ~/.gitconfig\n%v", r)
	}
	if r := b.run("--", "sh", "-c", `grep -q evil "$HOME/.gitconfig"`); r.code != 0 {
		t.Errorf("control: the same workspace's home lost its file\n%v", r)
	}
}

// TestDeputyPathArguments: host paths that would hand the sandbox the
// host are refused with 125 before anything is written (the sbx data home
// stays empty); sbx exec rejects the same workspaces.
func TestDeputyPathArguments(t *testing.T) {
	b := newBox(t)
	home := b.tempDir()
	cases := [][]string{
		{"--home", "/proc"},
		{"--home", "/"},
		{"--workspace", "/sys/fs/cgroup", "-w"},
		{"--workspace", "/dev/shm"},
		{"--workspace", "/"},
		{"--rw", "/etc"},
		{"--workspace", "/usr", "-w"},
		{"--workspace", home}, // the user's home
		{"--workspace", filepath.Dir(home)},
	}
	if !rootless() {
		cases = append(cases, []string{"--workspace", "/run", "-w"}, []string{"--workspace", "/run/sbx"})
	}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			b := b.in(t)
			r := b.runOpts(opts{env: []string{"HOME=" + home}}, append(args, "--", "true")...)
			if r.code != 125 || !strings.Contains(r.stderr, "sbx: ") {
				t.Errorf("want 125 and a message\n%v", r)
			}
			if ents, _ := os.ReadDir(b.data); len(ents) != 0 {
				t.Errorf("a refused run created %s", filepath.Join(b.data, ents[0].Name()))
			}
		})
	}
	// The control: a project directory is fine.
	if r := b.runOpts(opts{env: []string{"HOME=" + home}}, "--", "true"); r.code != 0 {
		t.Errorf("control\n%v", r)
	}
	for _, ws := range []string{"/proc", "/sys/fs/cgroup", "/dev/shm", "/"} {
		b.exec(map[string]any{"command": []string{"true"}, "workspace": ws}).wantRejected(t, "workspace "+ws)
	}
}

// TestDeputyExecStagingOptIn: sbx exec stages a host path named in the
// model's command only when the request says "stage": true and the
// harness allowed staging (--allow-stage); without the flag such a
// request is rejected and nothing runs.
func TestDeputyExecStagingOptIn(t *testing.T) {
	b := newBox(t)
	writeFile(t, filepath.Join(b.ws, "pi"), "#!/bin/sh\necho \"$2\"\n", 0o755)
	ext := filepath.Join(b.tempDir(), "ext.mjs")
	writeFile(t, ext, "export default 1\n", 0o644)
	cmd := []string{"./pi", "--extension", ext}
	run := b.exec(b.req(cmd))
	run.wantExited(t, 0)
	if got := strings.TrimSpace(run.res.Output); got != ext {
		t.Errorf("without stage the argument was rewritten: %q", got)
	}
	b.exec(b.req(cmd, "stage", true)).wantRejected(t, "the harness did not enable staging (sbx exec --allow-stage)")
	run = b.exec(b.req(cmd), "--allow-stage")
	run.wantExited(t, 0)
	if got := strings.TrimSpace(run.res.Output); got != ext {
		t.Errorf("--allow-stage alone staged: %q", got)
	}
	run = b.exec(b.req(cmd, "stage", true), "--allow-stage")
	run.wantExited(t, 0)
	if got := run.res.Output; !strings.Contains(got, "/.sbx-staging/") {
		t.Errorf("with stage the argument was not staged: %q", got)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestDeputyCopyBackFailureIsVisible: a copy-back that cannot be done
// makes sbx exit 125 when the program itself succeeded, and says why;
// the program's own failure status is kept as it is.
func TestDeputyCopyBackFailureIsVisible(t *testing.T) {
	m := deputyModes(t)[0]
	b := deputyBox(t, m)
	// The session directory is swapped for another directory: refused.
	attack := "mv sess sess.moved && mkdir sess"
	r := b.runOpts(opts{env: m.env}, "-w", "--env", "ATTACK="+attack, "--", "./pi", "--session", "sess/s.jsonl")
	if r.code != 125 || !strings.Contains(r.stderr, "sbx: copying staged files back") {
		t.Errorf("want 125 and the reason\n%v", r)
	}
	b2 := deputyBox(t, m)
	r = b2.runOpts(opts{env: m.env}, "-w", "--env", "ATTACK="+attack+"; exit 3", "--", "./pi", "--session", "sess/s.jsonl")
	if r.code != 3 {
		t.Errorf("the program's own status is lost\n%v", r)
	}
}

// TestDeputyRootRunsAsWorkspaceOwner: root without sudo does not hand the
// program uid 0 in a user's project: it runs as the workspace's owner,
// whose files it creates, and says so. The control: in a root-owned
// workspace the run is root's, as before.
func TestDeputyRootRunsAsWorkspaceOwner(t *testing.T) {
	if rootless() {
		t.Skip("root's behaviour")
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
	r := b.run("-w", "--", "sh", "-c", "id -u; touch made")
	if r.code != 0 || strings.TrimSpace(r.stdout) != fmt.Sprint(u.uid) {
		t.Fatalf("want uid %d\n%v", u.uid, r)
	}
	if !strings.Contains(r.stderr, "the owner of the workspace, not as root") {
		t.Errorf("not said\n%v", r)
	}
	fi, err := os.Stat(filepath.Join(b.ws, "made"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != u.uid {
		t.Errorf("the program's file is owned by %d, want %d", st.Uid, u.uid)
	}
	home := filepath.Join(u.home, ".local", "share", "sbx", "homes")
	if _, err := os.Stat(home); err != nil {
		t.Errorf("the sbx home is not the owner's: %v", err)
	}
	root := newSerialBox(t)
	if r := root.run("--", "id", "-u"); r.code != 0 || strings.TrimSpace(r.stdout) != "0" {
		t.Errorf("control: a root-owned workspace\n%v", r)
	}
}

// TestDeputyNotUTF8: bytes that are not UTF-8 in an argument or a path are
// refused (125), never turned into other names; the control passes the
// same name in UTF-8.
func TestDeputyNotUTF8(t *testing.T) {
	b := newBox(t)
	bad := filepath.Join(b.ws, "s\xff.jsonl")
	writeFile(t, bad, "x\n", 0o644)
	r := b.run("--", "cat", bad)
	if r.code != 125 || !strings.Contains(r.stderr, "not valid UTF-8") {
		t.Errorf("argument\n%v", r)
	}
	dir := filepath.Join(b.ws, "d\xfe")
	mkdir(t, dir)
	r = b.run("--workspace", dir, "--", "true")
	if r.code != 125 || !strings.Contains(r.stderr, "not valid UTF-8") {
		t.Errorf("workspace\n%v", r)
	}
	good := filepath.Join(b.ws, "s\u00ff.jsonl")
	writeFile(t, good, "x\n", 0o644)
	if r := b.run("--", "cat", good); r.code != 0 || r.stdout != "x\n" {
		t.Errorf("control\n%v", r)
	}
}

// TestDeputyProtectWalkReadsAsUser: the search for protected entries
// follows a gitfile's pointer and reads that git directory's config for
// core.hooksPath. Under sudo it does so with the user's rights: a git
// directory outside the workspace that only root may read (named by a .git
// file the program could write with --write) is not read, so nothing of it
// decides the run or reaches sbx's messages. The control: once the user
// may read it, the same run is refused (125) for the hooks path its config
// names.
func TestDeputyProtectWalkReadsAsUser(t *testing.T) {
	m := sudoMode(t)
	b := newBox(t)
	secret := target(t) // root's, mode 0700
	hooks := filepath.Join(b.ws, "hooks-to-be")
	writeFile(t, filepath.Join(secret, "config"), "[core]\n\thooksPath = "+hooks+"\n", 0o600)
	writeFile(t, filepath.Join(b.ws, ".git"), "gitdir: "+secret+"\n", 0o644)
	for _, p := range []string{b.ws, filepath.Join(b.ws, ".git")} {
		if err := os.Chown(p, m.uid, m.uid); err != nil {
			t.Fatal(err)
		}
	}
	r := b.runOpts(opts{env: m.env}, "--write", "--", "true")
	if r.code != 0 || strings.Contains(r.stderr, "hooks-to-be") {
		t.Errorf("sudo: root's git directory was read for the user (want exit 0, nothing of its config said)\n%v", r)
	}
	if err := os.Chmod(secret, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(secret, "config"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = b.runOpts(opts{env: m.env}, "--write", "--", "true")
	if want := "core.hooksPath of " + secret + " names " + hooks + ", which does not exist"; r.code != exitSbxError || !strings.Contains(r.stderr, want) {
		t.Errorf("control, the git directory readable by the user: want 125 and %q\n%v", want, r)
	}
}

// TestDeputySettingsReadAsUser: under sudo, --settings FILE is read with
// the user's rights: a file only root may read is refused (125, permission
// denied) before anything of it is parsed or said; the control: the same
// file, readable by the user, is applied.
func TestDeputySettingsReadAsUser(t *testing.T) {
	m := sudoMode(t)
	b := newBox(t)
	if err := os.Chown(b.ws, m.uid, m.uid); err != nil {
		t.Fatal(err)
	}
	dir := target(t)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	set := filepath.Join(dir, "srt.json")
	writeFile(t, set, `{"network": {"allowedDomains": ["secret-host.example"]}}`, 0o600)
	env := append(slices.Clone(m.env), confEnv(t, "")...)
	r := b.runOpts(opts{env: env}, "--no-profile", "--settings", set, "--", "true")
	if r.code != exitSbxError || !strings.Contains(r.stderr, "permission denied") || strings.Contains(r.stderr, "secret-host") {
		t.Errorf("sudo: a settings file only root may read: want 125, permission denied, nothing of it said\n%v", r)
	}
	if err := os.Chmod(set, 0o644); err != nil {
		t.Fatal(err)
	}
	r = b.runOpts(opts{env: env}, "--no-profile", "--settings", set, "--", "sh", "-c", "echo $HTTPS_PROXY")
	if r.code != 0 || !strings.Contains(r.stdout, "http://127.0.0.1:3128") {
		t.Errorf("control, the file readable by the user: its allowed domain must give the run the proxy\n%v", r)
	}
}

// sudoMode is the sudo deputyMode; rootless, the test is skipped (sbx has
// no other rights to lend).
func sudoMode(t *testing.T) deputyMode {
	t.Helper()
	if rootless() {
		t.Skip("sudo's behaviour: rootless sbx has no other rights to lend")
	}
	for _, d := range deputyModes(t) {
		if d.name == "sudo" {
			return d
		}
	}
	t.Fatal("no sudo mode")
	return deputyMode{}
}

// TestDeputyViolationsFile: --violations FILE in the workspace, which an
// earlier run's program could replace with a symlink to a host file (root's
// shell startup file, say) or a FIFO, is opened with the user's rights and
// never through a symlink, without blocking: both are refused (125) and the
// host file is untouched. The control: a regular file there gets the
// run's record appended.
func TestDeputyViolationsFile(t *testing.T) {
	for _, m := range deputyModes(t) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			b := deputyBox(t, m)
			dst := target(t)
			victim := filepath.Join(dst, "bashrc")
			writeFile(t, victim, "orig\n", 0o644)
			link := filepath.Join(b.ws, "v.jsonl")
			if err := os.Symlink(victim, link); err != nil {
				t.Fatal(err)
			}
			fifo := filepath.Join(b.ws, "v.fifo")
			if err := unix.Mkfifo(fifo, 0o666); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{link, fifo} {
				r := b.runOpts(opts{env: m.env}, "--violations", p, "--", "cat", "/root/.nope")
				if r.code != exitSbxError || !strings.Contains(r.stderr, "--violations") {
					t.Errorf("--violations %s: want 125 naming it\n%v", filepath.Base(p), r)
				}
			}
			if got := readFile(t, victim); got != "orig\n" {
				t.Errorf("the host file behind the symlink changed: %q", got)
			}
			// The control: a regular file gets the record.
			ok := filepath.Join(b.ws, "ok.jsonl")
			writeFile(t, ok, "", 0o644)
			chownToUser(t, ok)
			if m.uid >= 0 {
				if err := os.Chown(ok, m.uid, m.uid); err != nil {
					t.Fatal(err)
				}
			}
			r := b.runOpts(opts{env: m.env}, "--violations", ok, "--", "sh", "-c", "echo x > /etc/sbx-denied; exit 0")
			// (Rootless there is no tracer to report the refused write.)
			if r.code != 0 || (!rootless() && !strings.Contains(readFile(t, ok), `"op"`)) {
				t.Errorf("control: the violations file has no record\n%v\nfile: %q", r, readFile(t, ok))
			}
		})
	}
}

// TestDeputyRequestReadAsUser: sbx exec --request FILE is read with the
// user's rights and never through a symlink: under sudo a request only
// root may read, and a symlink to one, are refused (125) without a result;
// the control: the same request readable by the user runs.
func TestDeputyRequestReadAsUser(t *testing.T) {
	m := sudoMode(t)
	b := newBox(t)
	if err := os.Chown(b.ws, m.uid, m.uid); err != nil {
		t.Fatal(err)
	}
	dir := target(t)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	req := filepath.Join(dir, "req.json")
	writeFile(t, req, `{"command": ["echo", "ran"], "workspace": "`+b.ws+`"}`, 0o600)
	link := filepath.Join(b.ws, "req-link.json")
	if err := os.Symlink(req, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{req, link} {
		r := b.sbx(opts{env: m.env}, "exec", "--request", p)
		if r.code != exitSbxError || strings.Contains(r.stdout, "ran") {
			t.Errorf("--request %s: want 125 and no run\n%v", p, r)
		}
	}
	if err := os.Chmod(req, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := b.sbx(opts{env: m.env}, "exec", "--request", req); r.code != 0 || !strings.Contains(r.stdout, "ran") {
		t.Errorf("control, the request readable by the user\n%v", r)
	}
}
