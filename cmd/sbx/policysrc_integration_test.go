package main

// Policy inputs a sandbox could have written (issue 25, classes 1 and 2):
// a settings file in the workspace, an sbx home or a place others may
// write only tightens; "tighten" is decided on what paths are, never on
// their names; protected entries open only by a --rw flag; a config an
// earlier run could write is refused; a profile's login file is never
// taken through a symlink; globs are bounded; missing denyRead/denyWrite
// paths are no error. Each attack has its control.

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// trustedSettings writes content to a settings file outside the
// workspace, in a directory only its owner writes: a file that may allow.
func trustedSettings(t *testing.T, b *box, content string) string {
	t.Helper()
	dir := b.tempDir()
	p := filepath.Join(dir, "global.json")
	writeFile(t, p, content, 0o644)
	chownToUser(t, p)
	return p
}

// projectSettings writes content to <ws>/.pi/sandbox.json.
func projectSettings(t *testing.T, b *box, content string) string {
	t.Helper()
	dir := filepath.Join(b.ws, ".pi")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "sandbox.json")
	writeFile(t, p, content, 0o644)
	chownToUser(t, dir, p)
	return p
}

// TestPolicyProjectFileOnlyTightens: the project's file, even as the only
// (first) --settings, may not allow: 125 naming why; the same content
// from a file outside the workspace allows (the control).
func TestPolicyProjectFileOnlyTightens(t *testing.T) {
	b := newBox(t)
	const content = `{"filesystem": {"allowWrite": ["."]}}`
	env := opts{env: confEnv(t, "")}
	script := "echo x > new.txt; echo new=$?"
	r := b.runOpts(env, "--no-profile", "--settings", projectSettings(t, b, content), "--", "sh", "-c", script)
	if r.code != exitSbxError || !strings.Contains(r.stderr, "it lies inside the workspace") || !strings.Contains(r.stderr, "may only tighten") {
		t.Errorf("the project's file as the first --settings: want 125, tighten-only because it lies in the workspace\n%v", r)
	}
	if _, err := os.Stat(filepath.Join(b.ws, "new.txt")); err == nil {
		t.Errorf("new.txt was written")
	}
	r = b.runOpts(env, "--no-profile", "--settings", trustedSettings(t, b, content), "--", "sh", "-c", script)
	if r.code != 0 || !strings.Contains(r.stdout, "new=0") {
		t.Errorf("control, the same file outside the workspace: want the workspace writable\n%v", r)
	}
	// A file others may write only tightens, wherever it lies.
	open := trustedSettings(t, b, content)
	if err := os.Chmod(open, 0o666); err != nil {
		t.Fatal(err)
	}
	r = b.runOpts(env, "--no-profile", "--settings", open, "--", "true")
	if r.code != exitSbxError || !strings.Contains(r.stderr, "others may write it") {
		t.Errorf("a world-writable settings file: want 125, tighten-only\n%v", r)
	}
	// So does one in an sbx home.
	home := filepath.Join(b.data, "sbx", "homes", "x")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	inHome := filepath.Join(home, "s.json")
	writeFile(t, inHome, content, 0o644)
	chownToUser(t, filepath.Join(b.data, "sbx"), filepath.Join(b.data, "sbx", "homes"), home, inHome)
	r = b.runOpts(env, "--no-profile", "--settings", inHome, "--", "true")
	if r.code != exitSbxError || !strings.Contains(r.stderr, "sbx's homes") {
		t.Errorf("a settings file in an sbx home: want 125, tighten-only\n%v", r)
	}
}

// TestPolicySymlinkedAllowWrite: the project's allowWrite "./build" with
// build a symlink to a host file or directory outside the workspace is
// refused (125 naming the link), and the target is unchanged; the control
// is build a real directory, which the run writes.
func TestPolicySymlinkedAllowWrite(t *testing.T) {
	b := newBox(t)
	env := opts{env: confEnv(t, "")}
	global := trustedSettings(t, b, `{"filesystem": {"allowWrite": ["."]}}`)
	project := projectSettings(t, b, `{"filesystem": {"allowWrite": ["./build"]}}`)
	victimDir := b.tempDir()
	victim := filepath.Join(victimDir, ".bashrc")
	writeFile(t, victim, "# rc\n", 0o644)
	chownToUser(t, victim)
	build := filepath.Join(b.ws, "build")
	for _, target := range []string{victim, victimDir} {
		if err := os.Symlink(target, build); err != nil {
			t.Fatal(err)
		}
		chownToUser(t, build)
		r := b.runOpts(env, "--no-profile", "--settings", global, "--tighten-settings", project, "--",
			"sh", "-c", "echo pwned >> build; echo pwned > build/.bashrc")
		if r.code != exitSbxError || !strings.Contains(r.stderr, build+": a symlink is not followed") {
			t.Errorf("allowWrite ./build -> %s: want 125 naming the link\n%v", target, r)
		}
		if data, _ := os.ReadFile(victim); string(data) != "# rc\n" {
			t.Fatalf("the target changed: %q", data)
		}
		if err := os.Remove(build); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(build, 0o755); err != nil {
		t.Fatal(err)
	}
	chownToUser(t, build)
	r := b.runOpts(env, "--no-profile", "--settings", global, "--tighten-settings", project, "--",
		"sh", "-c", "echo ok > build/out; echo build=$?; echo x > top.txt; echo top=$?")
	if r.code != 0 || !strings.Contains(r.stdout, "build=0") || !strings.Contains(r.stdout, "top=2") {
		t.Errorf("control, build a real directory: want it writable and the rest of the workspace not\n%v", r)
	}
}

// TestPolicyProtectedNotOpenedBySettings: allowWrite [".", "./.git"] from a
// settings file (the trusted one as much as the project's) leaves .git
// read-only (EROFS inside); --rw .git on the command line opens it.
func TestPolicyProtectedNotOpenedBySettings(t *testing.T) {
	b := newBox(t)
	env := opts{env: confEnv(t, "")}
	git := filepath.Join(b.ws, ".git")
	if err := os.Mkdir(git, 0o755); err != nil {
		t.Fatal(err)
	}
	chownToUser(t, git)
	global := trustedSettings(t, b, `{"filesystem": {"allowWrite": [".", "./.git"]}}`)
	project := projectSettings(t, b, `{"filesystem": {"allowWrite": [".", "./.git"]}}`)
	const script = "touch .git/hook 2>&1; echo git=$?; touch top.txt; echo top=$?"
	for _, args := range [][]string{
		{"--settings", global},
		{"--settings", global, "--tighten-settings", project},
	} {
		r := b.runOpts(env, append(append([]string{"--no-profile"}, args...), "--", "sh", "-c", script)...)
		if r.code != 0 || !strings.Contains(r.stdout, "Read-only file system") || !strings.Contains(r.stdout, "git=1") ||
			!strings.Contains(r.stdout, "top=0") || !strings.Contains(r.stderr, "keeping "+git+" read-only") {
			t.Errorf("%q: want .git read-only (EROFS), the workspace writable, and a note\n%v", args, r)
		}
		if _, err := os.Stat(filepath.Join(git, "hook")); err == nil {
			t.Fatalf("%q: .git/hook was created", args)
		}
	}
	r := b.runOpts(env, "--no-profile", "--settings", global, "--rw", ".git", "--", "sh", "-c", script)
	if r.code != 0 || !strings.Contains(r.stdout, "git=0") {
		t.Errorf("control, --rw .git on the command line: want .git writable\n%v", r)
	}
}

// TestPolicyConfigWrittenByEarlierRun: a run with --rw over the config
// directory plants a config that loosens; the next run refuses it (125,
// naming the file and the run that could write it). Re-created outside
// any sandbox, it applies (the control). A run with --rw over an existing
// config keeps it read-only and still reads it.
func TestPolicyConfigWrittenByEarlierRun(t *testing.T) {
	b := newBox(t)
	other := fakeAgent(t, b, "other")
	cfgHome := b.tempDir()
	env := opts{env: []string{"XDG_CONFIG_HOME=" + cfgHome}}
	conf := filepath.Join(cfgHome, "sbx", "config.toml")
	plant := "mkdir -p " + filepath.Dir(conf) + " && printf '[defaults]\\nenv = [\"A=planted\"]\\n' > " + conf + " && echo planted"
	r := b.runOpts(env, "--no-profile", "--rw", cfgHome, "--", "sh", "-c", plant)
	if r.code != 0 || !strings.Contains(r.stdout, "planted") {
		t.Fatalf("the planting run: %v", r)
	}
	r = b.runOpts(env, "--no-profile", "--", other)
	if r.code != exitSbxError || strings.Contains(r.stdout, "A=planted") || !strings.Contains(r.stderr, conf) ||
		!strings.Contains(r.stderr, "could write "+cfgHome) || !strings.Contains(r.stderr, "re-create it outside any sandbox") {
		t.Errorf("a config an earlier run wrote: want 125 naming the file, the run and the fix\n%v", r)
	}
	time.Sleep(300 * time.Millisecond) // past the grant's slack
	if err := os.RemoveAll(filepath.Join(cfgHome, "sbx")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(conf), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, conf, "[defaults]\nenv = [\"A=mine\"]\n", 0o644)
	chownToUser(t, filepath.Dir(conf), conf)
	r = b.runOpts(env, "--no-profile", "--", other)
	if r.code != 0 || !strings.Contains(r.stdout, "A=mine\n") {
		t.Errorf("control, the config re-created on the host: want it applied\n%v", r)
	}
	r = b.runOpts(env, "--no-profile", "--rw", cfgHome, "--", "sh", "-c", "echo 'rw = [\"/\"]' >> "+conf+"; echo append=$?; env | grep ^A=")
	if r.code != 0 || !strings.Contains(r.stdout, "append=2") || !strings.Contains(r.stdout, "A=mine") {
		t.Errorf("--rw over the config directory: want the config read and kept read-only\n%v", r)
	}
	if data, _ := os.ReadFile(conf); strings.Contains(string(data), "rw =") {
		t.Errorf("the config was changed: %q", data)
	}
}

// TestPolicyProfileLoginSymlink: the pi profile's ~/.pi/agent/auth.json,
// planted as a symlink to another host file (as an earlier run with the
// agent directory writable could), is left out with a line on stderr and
// the target is not shown; the control, a regular file, is shown
// read-only at its path.
func TestPolicyProfileLoginSymlink(t *testing.T) {
	b := newBox(t)
	home := b.tempDir()
	agent := filepath.Join(home, ".pi", "agent")
	if err := os.MkdirAll(agent, 0o755); err != nil {
		t.Fatal(err)
	}
	chownToUser(t, filepath.Join(home, ".pi"), agent)
	secret := filepath.Join(b.tempDir(), "id_ed25519")
	writeFile(t, secret, "SECRET-KEY\n", 0o600)
	chownToUser(t, secret)
	auth := filepath.Join(agent, "auth.json")
	if err := os.Symlink(secret, auth); err != nil {
		t.Fatal(err)
	}
	chownToUser(t, auth)
	env := opts{env: append(confEnv(t, ""), "HOME="+home)}
	r := b.runOpts(env, "--profile", "pi", "--", "cat", auth)
	if strings.Contains(r.stdout, "SECRET-KEY") || !strings.Contains(r.stderr, "leaving out "+auth) {
		t.Errorf("a symlinked login file: want it left out, said on stderr\n%v", r)
	}
	if err := os.Remove(auth); err != nil {
		t.Fatal(err)
	}
	writeFile(t, auth, "LOGIN\n", 0o600)
	chownToUser(t, auth)
	r = b.runOpts(env, "--profile", "pi", "--", "sh", "-c", "cat "+auth+"; echo x >> "+auth+"; echo w=$?")
	if r.code != 0 || !strings.Contains(r.stdout, "LOGIN") || !strings.Contains(r.stdout, "w=2") {
		t.Errorf("control, a regular login file: want it shown read-only\n%v", r)
	}
	// A user profile's ro path, the same way.
	link := filepath.Join(home, "keys")
	if err := os.Symlink(filepath.Dir(secret), link); err != nil {
		t.Fatal(err)
	}
	chownToUser(t, link)
	cfg := opts{env: append(confEnv(t, "[profiles.mine]\nro = [\"~/keys\"]\n"), "HOME="+home)}
	r = b.runOpts(cfg, "--profile", "mine", "--", "cat", filepath.Join(link, "id_ed25519"))
	if strings.Contains(r.stdout, "SECRET-KEY") || !strings.Contains(r.stderr, "leaving out "+link) {
		t.Errorf("a profile's ro path that is a symlink: want it left out\n%v", r)
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(link, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(link, "pub"), "PUBLIC\n", 0o644)
	chownToUser(t, link, filepath.Join(link, "pub"))
	r = b.runOpts(cfg, "--profile", "mine", "--", "cat", filepath.Join(link, "pub"))
	if r.code != 0 || !strings.Contains(r.stdout, "PUBLIC") {
		t.Errorf("control, a profile's ro path that is a directory: want it shown\n%v", r)
	}
}

// TestPolicyGlobSymlinkLoop: a project file's pattern 20 levels deep over
// a workspace of symlink loops costs the run under 2 s more than the same
// run without it, and sbx under 100 MiB.
func TestPolicyGlobSymlinkLoop(t *testing.T) {
	b := newBox(t)
	for _, l := range []string{"a", "b", "c", "d"} {
		if err := os.Symlink(".", filepath.Join(b.ws, l)); err != nil {
			t.Fatal(err)
		}
		chownToUser(t, filepath.Join(b.ws, l))
	}
	pattern := strings.Repeat("*/", 19) + "*.pem"
	project := projectSettings(t, b, `{"filesystem": {"denyRead": ["`+pattern+`", "*.key"]}}`)
	global := trustedSettings(t, b, `{}`)
	env := opts{env: confEnv(t, "")}
	timed := func(args ...string) (time.Duration, int64, result) {
		ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
		defer cancel()
		cmd := b.command(ctx, env, sbxBin, append([]string{"run", "--no-profile"}, args...)...)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		start := time.Now()
		err := cmd.Run()
		took := time.Since(start)
		var rss int64
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			rss = ru.Maxrss << 10
		}
		return took, rss, result{stdout: out.String(), stderr: errb.String(), code: exitCode(err)}
	}
	base, _, r := timed("--settings", global, "--", "true")
	if r.code != 0 {
		t.Fatalf("control run: %v", r)
	}
	took, rss, r := timed("--settings", global, "--tighten-settings", project, "--", "true")
	if r.code != 0 {
		t.Fatalf("with the pattern: %v", r)
	}
	if took > base+2*time.Second || rss > 100<<20 {
		t.Errorf("the pattern over symlink loops took %v (control %v) and %d MiB", took, base, rss>>20)
	}
}

// TestPolicyMissingDenials: pi's defaults deny ~/.ssh and .env, which a
// machine may lack: no error. A missing denyWrite path below an existing
// directory keeps that directory read-only so that it cannot be created.
// The control: an existing ~/.ssh is masked.
func TestPolicyMissingDenials(t *testing.T) {
	b := newBox(t)
	home := b.tempDir()
	conf := filepath.Join(b.ws, "conf")
	if err := os.Mkdir(conf, 0o755); err != nil {
		t.Fatal(err)
	}
	chownToUser(t, conf)
	global := trustedSettings(t, b, `{"filesystem": {"allowWrite": ["."], "denyRead": ["~/.ssh", ".env"], "denyWrite": [".env", "conf/secret.yml"]}}`)
	env := opts{env: append(confEnv(t, ""), "HOME="+home)}
	r := b.runOpts(env, "--no-profile", "--settings", global, "--", "sh", "-c", "touch conf/secret.yml; echo secret=$?; touch x; echo x=$?")
	if r.code != 0 || !strings.Contains(r.stdout, "secret=1") || !strings.Contains(r.stdout, "x=0") ||
		!strings.Contains(r.stderr, "keeping "+conf+" read-only instead") {
		t.Errorf("missing denyRead/denyWrite paths: want the run, conf read-only, the rest writable\n%v", r)
	}
	ssh := filepath.Join(home, ".ssh")
	if err := os.Mkdir(ssh, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ssh, "id"), "KEY\n", 0o600)
	chownToUser(t, ssh, filepath.Join(ssh, "id"))
	r = b.runOpts(env, "--no-profile", "--settings", global, "--ro", ssh, "--", "sh", "-c", "cat "+ssh+"/id; echo cat=$?")
	if r.code != 0 || strings.Contains(r.stdout, "KEY") || !strings.Contains(r.stdout, "cat=1") {
		t.Errorf("control, ~/.ssh exists and is shown: want it masked\n%v", r)
	}
}

// TestPolicySymlinkedAllowWriteSudo: under sudo, the project's allowWrite
// through a symlink to a file only root may write is refused before
// anything is resolved as root (the file is unchanged); the control, a
// real directory of the user's, is writable.
func TestPolicySymlinkedAllowWriteSudo(t *testing.T) {
	m := sudoMode(t)
	b := newBox(t)
	if err := os.Chown(b.ws, m.uid, m.uid); err != nil {
		t.Fatal(err)
	}
	dir := target(t)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	global := filepath.Join(dir, "global.json")
	writeFile(t, global, `{"filesystem": {"allowWrite": ["."]}}`, 0o644)
	victim := filepath.Join(dir, "root-only")
	writeFile(t, victim, "root\n", 0o644)
	project := projectSettings(t, b, `{"filesystem": {"allowWrite": ["./build"]}}`)
	build := filepath.Join(b.ws, "build")
	if err := os.Symlink(victim, build); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Dir(project), project, build} {
		if err := os.Lchown(p, m.uid, m.uid); err != nil {
			t.Fatal(err)
		}
	}
	env := opts{env: m.env}
	r := b.runOpts(env, "--no-profile", "--settings", global, "--tighten-settings", project, "--", "sh", "-c", "echo pwned >> build")
	if r.code != exitSbxError || !strings.Contains(r.stderr, build+": a symlink is not followed") {
		t.Errorf("sudo: allowWrite through a symlink to a root file: want 125 naming the link\n%v", r)
	}
	if data, _ := os.ReadFile(victim); string(data) != "root\n" {
		t.Fatalf("the root file changed: %q", data)
	}
	if err := os.Remove(build); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(build, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(build, m.uid, m.uid); err != nil {
		t.Fatal(err)
	}
	r = b.runOpts(env, "--no-profile", "--settings", global, "--tighten-settings", project, "--", "sh", "-c", "echo ok > build/out; echo build=$?")
	if r.code != 0 || !strings.Contains(r.stdout, "build=0") {
		t.Errorf("sudo control, build a real directory of the user's: want it writable\n%v", r)
	}
}

// TestPolicySettingsFileWrittenByEarlierRun: a run given the user's own
// settings file with --rw widens it; the next run does not take that as
// the file that allows (125, naming the run). Rewritten on the host, it
// allows again (the control).
func TestPolicySettingsFileWrittenByEarlierRun(t *testing.T) {
	b := newBox(t)
	env := opts{env: confEnv(t, "")}
	global := trustedSettings(t, b, `{}`)
	wide := `{"filesystem": {"allowWrite": ["."]}}`
	r := b.runOpts(env, "--no-profile", "--rw", global, "--", "sh", "-c", "echo '"+wide+"' > "+global+"; echo w=$?")
	if r.code != 0 || !strings.Contains(r.stdout, "w=0") {
		t.Fatalf("the widening run: %v", r)
	}
	script := "echo x > top.txt; echo top=$?"
	r = b.runOpts(env, "--no-profile", "--settings", global, "--", "sh", "-c", script)
	if r.code != exitSbxError || !strings.Contains(r.stderr, "could write "+global) {
		t.Errorf("a settings file an earlier run wrote: want 125 naming the run\n%v", r)
	}
	time.Sleep(300 * time.Millisecond) // past the grant's slack
	writeFile(t, global, wide, 0o644)
	r = b.runOpts(env, "--no-profile", "--settings", global, "--", "sh", "-c", script)
	if r.code != 0 || !strings.Contains(r.stdout, "top=0") {
		t.Errorf("control, the file rewritten on the host: want it to allow\n%v", r)
	}
}
