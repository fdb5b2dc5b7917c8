package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Per-run state is per run (issue 25, class 4): what sbx copies in for
// one run (a single --rw file, staged sessions) lives in that run's own
// dir, bound at its place for that run alone; a concurrent or later run of
// the same workspace, which shares the sbx home, neither reads nor changes
// it. And everything sbx makes in a user's tree is the user's (issue 27).
// Each test runs as root, as root with sudo's environment, and rootless
// (the as-user pass).

// modeHome is a directory below the home sbx takes for the run's user in
// mode m (under sudo the user's passwd home, else $HOME, set to a temp
// dir), owned by that user, the options that give the run that home, and
// where that directory is in the run's sbx home.
func modeHome(t *testing.T, b *box, m deputyMode) (string, opts, string) {
	t.Helper()
	if m.uid < 0 {
		home := b.tempDir()
		return home, opts{env: append([]string{"HOME=" + home}, m.env...)}, b.sbxHome(b.data)
	}
	requireRoot(t) // creates and acts for another user
	u, err := ensureTestUser("sbx-rootless-test")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(u.home, ".sbx-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chown(dir, u.uid, u.gid); err != nil {
		t.Fatal(err)
	}
	// The run's sbx home is below the user's own ~/.local/share.
	sbxHome := b.sbxHome(filepath.Join(u.home, ".local", "share"))
	t.Cleanup(func() { os.RemoveAll(sbxHome) })
	rel, _ := filepath.Rel(u.home, dir)
	return dir, opts{env: m.env}, filepath.Join(sbxHome, rel)
}

// mkdirOwned creates dir and its missing parents, each the run's user's
// in mode m.
func mkdirOwned(t *testing.T, m deputyMode, dir string) {
	t.Helper()
	var missing []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		missing = append(missing, d)
	}
	mkdir(t, dir)
	own(t, m, missing...)
}

// own makes paths belong to the run's user in mode m.
func own(t *testing.T, m deputyMode, paths ...string) {
	t.Helper()
	chownToUser(t, paths...)
	if m.uid >= 0 {
		for _, p := range paths {
			if err := os.Lchown(p, m.uid, m.uid); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestRunStateRWFileNotShared: a single file granted with --rw is copied
// for the granted run alone. A concurrent run of the same workspace
// without the grant neither reads the copy nor gets its own edit copied
// back to the host; a later one finds nothing. The control: the granted
// run reads the file and its edit reaches the host.
func TestRunStateRWFileNotShared(t *testing.T) {
	for _, m := range deputyModes(t) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			b := deputyBox(t, m)
			home, o, inHome := modeHome(t, b, m)
			tok := filepath.Join(home, ".token")
			writeFile(t, tok, "TOKEN-1\n", 0o600)
			own(t, m, tok)
			// A copy an earlier sbx version left in the sbx home is
			// emptied.
			stale := filepath.Join(inHome, ".token")
			mkdirOwned(t, m, filepath.Dir(stale))
			writeFile(t, stale, "TOKEN-1\n", 0o600)
			own(t, m, stale)
			a := b.start(o, "run", "--rw", tok, "--", "sh", "-c",
				`cat "$1"; echo ready; while [ ! -e go ]; do sleep 0.05; done; echo edited-by-A > "$1"`, "sh", tok)
			a.waitLine("ready")
			r := b.runOpts(o, "--", "sh", "-c", `cat "$1" 2>&1; echo evil-by-B > "$1"; echo written`, "sh", tok)
			if strings.Contains(r.stdout, "TOKEN") || !strings.Contains(r.stdout, "written") {
				t.Errorf("a concurrent run without the grant: %v", r)
			}
			writeFile(t, filepath.Join(b.ws, "go"), "", 0o644)
			ra := a.wait()
			if ra.code != 0 || !strings.Contains(ra.stdout, "TOKEN-1") {
				t.Errorf("control: the granted run does not read its file: %v", ra)
			}
			if !strings.Contains(ra.stderr, "sbx: --rw "+tok+": emptied the copy an earlier sbx version left in the sbx home, "+stale+"\n") {
				t.Errorf("the stale copy in the sbx home is not reported emptied: %v", ra)
			}
			if got := readFile(t, tok); got != "edited-by-A\n" {
				t.Errorf("host file after both runs: %q, want the granted run's edit alone", got)
			}
			r = b.runOpts(o, "--", "sh", "-c", `cat "$1" 2>&1; true`, "sh", tok)
			if r.code != 0 || strings.Contains(r.stdout, "TOKEN") || strings.Contains(r.stdout, "edited-by-A") {
				t.Errorf("a later run without the grant: %v", r)
			}
		})
	}
}

// TestRunStateStagedSessionNotShared: two concurrent runs stage the same
// session file. The second learns where the first's copy is shown and
// tries to read it and to inject a line into it: it sees nothing there,
// and its injection reaches neither the first run nor the host. Both
// copy-backs land (the second one's as the conflict file, since the host
// file changed during its run).
func TestRunStateStagedSessionNotShared(t *testing.T) {
	for _, m := range deputyModes(t) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			b := deputyBox(t, m)
			a := b.start(opts{env: m.env}, "run", "--env", `ATTACK=echo "staged=$2"; while [ ! -e go ]; do sleep 0.05; done; cat "$2"; echo A-turn >> "$2"`,
				"--", "./pi", "--session", "sess/s.jsonl")
			var staged string
			for line := range a.lines {
				if s, ok := strings.CutPrefix(line, "staged="); ok {
					staged = s
					break
				}
			}
			if !strings.Contains(staged, "/.sbx-staging/") {
				t.Fatalf("the first run's session was not staged: %q\n%s", staged, a.stderrText())
			}
			attack := `cat "$TARGET" 2>&1; mkdir -p "$(dirname "$TARGET")" && echo INJECT >> "$TARGET" && echo injected; echo B-turn >> "$2"`
			r := b.runOpts(opts{env: m.env}, "--env", "TARGET="+staged, "--env", "ATTACK="+attack, "--", "./pi", "--session", "sess/s.jsonl")
			if r.code != 0 || strings.Contains(r.stdout, "host") || !strings.Contains(r.stdout, "injected") {
				t.Errorf("the second run read the first's staged session, or could not write its own home: %v", r)
			}
			writeFile(t, filepath.Join(b.ws, "go"), "", 0o644)
			ra := a.wait()
			if ra.code != 0 || strings.Contains(ra.stdout, "INJECT") {
				t.Errorf("the first run saw the second's injection: %v", ra)
			}
			if got := readFile(t, filepath.Join(b.ws, "sess", "s.jsonl")); got != "host\nPLANTED\nB-turn\n" {
				t.Errorf("host session: %q, want the second run's copy-back", got)
			}
			conflicts, _ := filepath.Glob(filepath.Join(b.ws, "sess", "s.sbx-conflict-*.jsonl"))
			if len(conflicts) != 1 || readFile(t, conflicts[0]) != "host\nPLANTED\nA-turn\n" {
				t.Errorf("the first run's copy-back: %q (stderr %q)", conflicts, ra.stderr)
			}
		})
	}
}

// TestRunStateNewSessionDir: pi --session naming a file in a directory
// that does not exist yet (an orchestrator's new session dir) is staged;
// the directory is made on the host as the user and the transcript comes
// back into it.
func TestRunStateNewSessionDir(t *testing.T) {
	for _, m := range deputyModes(t) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			b := deputyBox(t, m)
			r := b.runOpts(opts{env: m.env}, "--env", "ATTACK=true", "--", "./pi", "--session", "sess/new/deeper/s.jsonl")
			if r.code != 0 || strings.Contains(r.stderr, "not staging") {
				t.Fatalf("run: %v", r)
			}
			s := filepath.Join(b.ws, "sess", "new", "deeper", "s.jsonl")
			if got := readFile(t, s); got != "PLANTED\n" {
				t.Errorf("transcript: %q", got)
			}
			var ws syscall.Stat_t
			if err := syscall.Stat(b.ws, &ws); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{filepath.Dir(filepath.Dir(s)), filepath.Dir(s), s} {
				var st syscall.Stat_t
				if err := syscall.Lstat(p, &st); err != nil || st.Uid != ws.Uid {
					t.Errorf("%s: owner %d (%v), want the workspace's owner %d", p, st.Uid, err, ws.Uid)
				}
			}
		})
	}
}

// TestRunStateSudoHomeIsTheUsers: a run as root with sudo's environment,
// with files mounted below the user's home (a profile's login file, a
// prefix dir, a --rw file copied in, a staged session), leaves nothing
// owned by root in the user's home: the mount points sbx needs in the sbx
// home are made as the user. Root-owned entries an earlier version left
// there are given back to the user, but never a hard link to a file of
// root's or a file with content. A following rootless run of the same workspace then works.
func TestRunStateSudoHomeIsTheUsers(t *testing.T) {
	requireRoot(t)
	if rootless() {
		t.Skip("acts as root for another user")
	}
	requireRoot(t) // creates and acts for another user
	u, err := ensureTestUser("sbx-rootless-test")
	if err != nil {
		t.Fatal(err)
	}
	base, err := os.MkdirTemp(u.home, ".sbx-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	ws := filepath.Join(base, "work")
	agent := filepath.Join(base, "agent")
	prefix := filepath.Join(base, "npm-global")
	for _, d := range []string{base, ws, agent, prefix} {
		mkdir(t, d)
	}
	writeFile(t, filepath.Join(agent, "settings.json"), "{}\n", 0o644)
	writeFile(t, filepath.Join(agent, "auth.json"), "{\"k\":1}\n", 0o600)
	writeFile(t, filepath.Join(ws, "pi"), "#!/bin/sh\necho turn >> \"$2\"\n", 0o755)
	writeFile(t, filepath.Join(ws, "s.jsonl"), "", 0o644)
	_ = filepath.Walk(base, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, u.uid, u.gid) })
	b := &box{t: t, ws: ws, data: t.TempDir()}
	dataHome := filepath.Join(u.home, ".local", "share")
	sbxHome := b.sbxHome(dataHome)
	t.Cleanup(func() { os.RemoveAll(sbxHome) })

	// What an earlier version left: root-owned directories and a file,
	// and a hard link to a file of root's elsewhere (never to be given
	// away).
	rel, _ := filepath.Rel(u.home, base)
	poisoned := filepath.Join(sbxHome, ".pi", "agent")
	mkdir(t, filepath.Join(poisoned, "sessions"))
	writeFile(t, filepath.Join(poisoned, "settings.json"), "", 0o644)
	victim := filepath.Join(base, "root-victim")
	writeFile(t, victim, "root's\n", 0o600)
	link := filepath.Join(sbxHome, ".pi", "victim-link")
	if err := os.Link(victim, link); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(sbxHome, ".pi", "root-secret") // not a mount point: content
	writeFile(t, secret, "root's\n", 0o600)
	if err := os.Chown(filepath.Join(u.home, ".local"), u.uid, u.gid); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Join(dataHome), filepath.Join(dataHome, "sbx"), filepath.Join(dataHome, "sbx", "homes"), sbxHome} {
		if err := os.Chown(d, u.uid, u.gid); err != nil {
			t.Fatal(err)
		}
	}

	// Rootless, the user cannot change them: the run says the command
	// that does, and the program fails below them (the control).
	ub := &box{t: t, ws: ws, data: dataHome, runDir: t.TempDir(), user: &u}
	if err := os.Chmod(filepath.Dir(ub.runDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(ub.runDir, u.uid, u.gid); err != nil {
		t.Fatal(err)
	}
	const write = "mkdir -p ~/.pi/agent/sessions/x && echo ok > ~/.pi/agent/settings.json && echo done"
	r := ub.run("--", "sh", "-c", write)
	if r.code == 0 || !strings.Contains(r.stderr, "sbx: the sbx home "+sbxHome+" holds 4 entries owned by root (left by an earlier sbx run as root), which the program cannot change; give them back with: sudo find '"+sbxHome+"' -xdev -user 0 \\( -type d -o -type f -links 1 \\) -exec chown -h "+itoa(u.uid)+":"+itoa(u.gid)+" {} +\n") {
		t.Errorf("a rootless run in the poisoned home: %v", r)
	}

	sudo := opts{env: []string{"SUDO_UID=" + itoa(u.uid), "SUDO_GID=" + itoa(u.gid), "SUDO_USER=" + u.name}}
	r = b.runOpts(sudo, "--ro", filepath.Join(agent, "settings.json"), "--ro", prefix, "--rw", filepath.Join(agent, "auth.json"),
		"--", "./pi", "--session", "s.jsonl")
	if r.code != 0 {
		t.Fatalf("sudo run: %v", r)
	}
	if !strings.Contains(r.stderr, "sbx: gave 4 root-owned entries in the sbx home "+sbxHome+" (left by an earlier sbx run as root) back to "+u.name+"\n") {
		t.Errorf("the repair is not reported: %v", r)
	}
	if got := readFile(t, filepath.Join(ws, "s.jsonl")); got != "turn\n" {
		t.Errorf("control: the staged session did not come back: %q", got)
	}
	out, err := exec.Command("find", base, sbxHome, "-user", "root", "-not", "-path", victim, "-not", "-path", link, "-not", "-path", secret).CombinedOutput()
	if err != nil || len(out) != 0 {
		t.Errorf("owned by root in the user's home and sbx home after a sudo run (%v):\n%s", err, out)
	}
	var st syscall.Stat_t
	for _, p := range []string{victim, secret} {
		if err := syscall.Stat(p, &st); err != nil || st.Uid != 0 {
			t.Errorf("%s was given away: owner %d (%v)", p, st.Uid, err)
		}
	}
	for _, mp := range []string{filepath.Join(rel, "agent", "settings.json"), filepath.Join(rel, "npm-global"), filepath.Join(rel, "work")} {
		if _, err := os.Lstat(filepath.Join(sbxHome, mp)); err != nil {
			t.Errorf("mount point %s: %v (the test no longer covers it)", mp, err)
		}
	}

	// The same workspace, rootless, as the user: it writes below the
	// entries the earlier version had made root's.
	r = ub.run("--", "sh", "-c", write)
	if r.code != 0 || r.stdout != "done\n" {
		t.Errorf("a rootless run of the same workspace after the sudo run: %v", r)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestRunStateKilledRunCopiedBack: sbx is killed (SIGKILL) while its
// program runs with a staged session and a --rw file copied in; the next
// run copies back what the killed one's program wrote to both, from the
// killed run's own dir, and removes that dir.
func TestRunStateKilledRunCopiedBack(t *testing.T) {
	for _, m := range deputyModes(t) {
		t.Run(m.name, func(t *testing.T) {
			b := deputyBox(t, m)
			home, o, _ := modeHome(t, b, m)
			tok := filepath.Join(home, ".token")
			writeFile(t, tok, "TOKEN-1\n", 0o600)
			own(t, m, tok)
			p := b.start(o, "run", "--rw", tok, "--env", "TOK="+tok,
				"--env", `ATTACK=echo killed-turn >> "$2"; echo TOKEN-2 > "$TOK"; echo ready; exec sleep 300.0271`,
				"--", "./pi", "--session", "sess/s.jsonl")
			p.waitLine("ready")
			ids, err := runs.ids(p.cmd.Process.Pid, p.start, 5*time.Second)
			if err != nil || len(ids) != 1 {
				p.signal(syscall.SIGKILL)
				t.Fatalf("sandbox id of the run: %v %v", ids, err)
			}
			if !exists(filepath.Join(stateRoot, "runs", ids[0])) {
				t.Errorf("control: the run has no run dir %s", filepath.Join(stateRoot, "runs", ids[0]))
			}
			p.signal(syscall.SIGKILL)
			_ = p.cmd.Wait()
			p.cancel()
			killedRuns.Store(true)
			if got := readFile(t, tok); got != "TOKEN-1\n" {
				t.Errorf("control: the --rw file changed before copy-back: %q", got)
			}
			if r := b.runOpts(o, "--", "true"); r.code != 0 {
				t.Errorf("next run: %v", r)
			}
			if got := readFile(t, filepath.Join(b.ws, "sess", "s.jsonl")); got != "host\nPLANTED\nkilled-turn\n" {
				t.Errorf("the killed run's session: %q, want its program's lines copied back", got)
			}
			if got := readFile(t, tok); got != "TOKEN-2\n" {
				t.Errorf("the killed run's --rw file: %q, want its program's edit copied back", got)
			}
			assertNoLeftovers(t, ids[0])
		})
	}
}

// TestRunStateMountPointSymlinkRefused: a symlink planted in the sbx home
// (by an earlier run of the workspace) where sbx makes a mount point for a
// file below the home is never followed: the run is refused and nothing
// is made where the link points (the workspace's .git). The control:
// without the link the run works and the mount point is the user's.
func TestRunStateMountPointSymlinkRefused(t *testing.T) {
	for _, m := range deputyModes(t) {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			b := deputyBox(t, m)
			home, o, inHome := modeHome(t, b, m)
			git := filepath.Join(b.ws, ".git")
			mkdir(t, git)
			own(t, m, git)
			conf := filepath.Join(home, "conf", "settings.json")
			mkdir(t, filepath.Dir(conf))
			writeFile(t, conf, "{}\n", 0o644)
			own(t, m, filepath.Dir(conf), conf)
			mkdirOwned(t, m, inHome)
			planted := filepath.Join(inHome, "conf")
			symlink(t, git, planted)
			own(t, m, planted)
			r := b.runOpts(o, "--ro", conf, "--", "cat", conf)
			if r.code != exitSbxError || !strings.Contains(r.stderr, "create the mount point of "+conf) {
				t.Errorf("a mount point through a planted symlink: %v", r)
			}
			mustBeEmpty(t, git)
			if err := os.Remove(planted); err != nil {
				t.Fatal(err)
			}
			r = b.runOpts(o, "--ro", conf, "--", "cat", conf)
			if r.code != 0 || r.stdout != "{}\n" {
				t.Errorf("control: %v", r)
			}
			var st, ws syscall.Stat_t
			if err := syscall.Lstat(filepath.Join(planted, "settings.json"), &st); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Stat(b.ws, &ws); err != nil || st.Uid != ws.Uid {
				t.Errorf("mount point owned by %d, want the user %d (%v)", st.Uid, ws.Uid, err)
			}
		})
	}
}
