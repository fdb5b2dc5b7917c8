package main

// Profiles, the config file, srt settings, --mask and --quiet (issues #18
// and #20) with real sandboxes. Each denial is shown with its control: the
// same operation working without the mask, the profile or the setting.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// confEnv gives sbx a config home of the test's own (with content, when
// not "") so that no real config applies.
func confEnv(t *testing.T, content string) []string {
	t.Helper()
	dir := t.TempDir()
	if content != "" {
		if err := os.MkdirAll(filepath.Join(dir, "sbx"), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, "sbx", "config.toml"), content, 0o644)
	}
	return []string{"XDG_CONFIG_HOME=" + dir}
}

// TestMaskFileAndDir: a masked file or directory stays visible, empty and
// unreadable (EACCES, reported as a denial), on the Landlock tier and with
// every tier of the host; the control reads the same content unmasked.
func TestMaskFileAndDir(t *testing.T) {
	b := newBox(t)
	writeFile(t, filepath.Join(b.ws, ".env"), "SECRET=1\n", 0o644)
	if err := os.MkdirAll(filepath.Join(b.ws, "keys"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(b.ws, "keys", "id"), "KEY\n", 0o644)
	// A protected entry below a masked directory: the mask covers it.
	if err := os.MkdirAll(filepath.Join(b.ws, "keys", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	chownToUser(t, filepath.Join(b.ws, ".env"), filepath.Join(b.ws, "keys"), filepath.Join(b.ws, "keys", "id"), filepath.Join(b.ws, "keys", ".git"))
	env := opts{env: confEnv(t, "")}
	const script = `cat .env; echo "cat=$?"; cat keys/id; echo "catdir=$?"; ls keys; echo "ls=$?"; stat -c '%n %s %a' .env; echo x > .env; echo "write=$?"`

	control := b.runOpts(env, "--no-profile", "-w", "--", "sh", "-c", "cat .env; cat keys/id")
	if control.code != 0 || control.stdout != "SECRET=1\nKEY\n" {
		t.Fatalf("control without --mask: %v", control)
	}
	for _, policy := range []string{"landlock", "auto"} {
		t.Run(policy, func(t *testing.T) {
			r := b.in(t).runOpts(env, "--no-profile", "-w", "--policy", policy, "--mask", ".env", "--mask", "keys", "--", "sh", "-c", script)
			if strings.Contains(r.stdout, "SECRET") || strings.Contains(r.stdout, "KEY") {
				t.Fatalf("masked content read: %v", r)
			}
			for _, want := range []string{"cat=1", "catdir=1", "ls=2", ".env 0 0", "write=2"} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("stdout lacks %q: %v", want, r)
				}
			}
			if !strings.Contains(r.stderr, ".env: Permission denied") || !strings.Contains(r.stderr, "keys': Permission denied") {
				t.Errorf("want EACCES for both: %v", r)
			}
			if !rootless() { // the tracer reports (it needs root)
				ws, _ := filepath.EvalSymlinks(b.ws)
				if !strings.Contains(r.stderr, "sbx: denied open "+ws+"/.env") {
					t.Errorf("no denial line for the masked file: %v", r)
				}
			}
		})
	}
	if data, err := os.ReadFile(filepath.Join(b.ws, ".env")); err != nil || string(data) != "SECRET=1\n" {
		t.Errorf("host .env after the runs: %q %v", data, err)
	}
}

// TestMaskHardLinks: a hard link made before the run to a masked file,
// elsewhere in the workspace, is masked too (the mount level hides a path,
// not a file; Landlock cannot deny the file, and rootless there is no BPF
// LSM tier): reading it fails with EACCES. The control reads the secret
// through the link without --mask. The same holds for a file inside a
// masked directory, linked from outside it.
func TestMaskHardLinks(t *testing.T) {
	b := newBox(t)
	writeFile(t, filepath.Join(b.ws, ".env"), "SECRET=1\n", 0o644)
	mkdir(t, filepath.Join(b.ws, "lib", "deep"))
	if err := os.Link(filepath.Join(b.ws, ".env"), filepath.Join(b.ws, "lib", "deep", "env.bak")); err != nil {
		t.Fatal(err)
	}
	chownToUser(t, filepath.Join(b.ws, ".env"), filepath.Join(b.ws, "lib"), filepath.Join(b.ws, "lib", "deep"))
	env := opts{env: confEnv(t, "")}
	const script = `cat lib/deep/env.bak; echo "cat=$?"`
	control := b.runOpts(env, "--no-profile", "--policy", "landlock", "--", "sh", "-c", script)
	if control.code != 0 || control.stdout != "SECRET=1\ncat=0\n" {
		t.Fatalf("control without --mask: %v", control)
	}
	r := b.runOpts(env, "--no-profile", "--policy", "landlock", "--mask", ".env", "--", "sh", "-c", script)
	if r.code != 0 || r.stdout != "cat=1\n" || !strings.Contains(r.stderr, "env.bak: Permission denied") {
		t.Errorf("the hard link of a masked file: want EACCES\n%v", r)
	}
	// A file inside a masked directory, linked from outside it.
	mkdir(t, filepath.Join(b.ws, "secrets", "api"))
	writeFile(t, filepath.Join(b.ws, "secrets", "api", "key"), "KEY=2\n", 0o644)
	if err := os.Link(filepath.Join(b.ws, "secrets", "api", "key"), filepath.Join(b.ws, "lib", "deep", "key.bak")); err != nil {
		t.Fatal(err)
	}
	chownToUser(t, filepath.Join(b.ws, "secrets"), filepath.Join(b.ws, "secrets", "api"), filepath.Join(b.ws, "secrets", "api", "key"))
	const dirScript = `cat lib/deep/key.bak; echo "cat=$?"`
	control = b.runOpts(env, "--no-profile", "--policy", "landlock", "--", "sh", "-c", dirScript)
	if control.code != 0 || control.stdout != "KEY=2\ncat=0\n" {
		t.Fatalf("control without --mask secrets: %v", control)
	}
	r = b.runOpts(env, "--no-profile", "--policy", "landlock", "--mask", "secrets", "--", "sh", "-c", dirScript)
	if r.code != 0 || r.stdout != "cat=1\n" || !strings.Contains(r.stderr, "key.bak: Permission denied") {
		t.Errorf("the hard link of a file in a masked directory: want EACCES\n%v", r)
	}
}

// TestQuiet: --quiet drops the denial lines; the --violations record and
// the count at the end stay. The control prints the line.
func TestQuiet(t *testing.T) {
	b := newBox(t)
	if rootless() {
		t.Skip("rootless runs have no tracer to report file denials")
	}
	writeFile(t, filepath.Join(b.ws, ".env"), "S\n", 0o644)
	vio := filepath.Join(t.TempDir(), "v.jsonl")
	env := opts{env: confEnv(t, "")}
	control := b.runOpts(env, "--no-profile", "--mask", ".env", "--", "cat", ".env")
	if control.code != 1 || !strings.Contains(control.stderr, "sbx: denied open") {
		t.Fatalf("control: %v", control)
	}
	r := b.runOpts(env, "--no-profile", "--quiet", "--violations", vio, "--mask", ".env", "--", "cat", ".env")
	if r.code != 1 || strings.Contains(r.stderr, "sbx: denied open") || !strings.Contains(r.stderr, "sbx: 1 operation(s) denied in all") {
		t.Fatalf("--quiet: %v", r)
	}
	data, err := os.ReadFile(vio)
	if err != nil || !strings.Contains(string(data), `"tier":"mask"`) {
		t.Fatalf("--violations: %q %v", data, err)
	}
	// quiet = true in the config's defaults does the same.
	r = b.runOpts(opts{env: confEnv(t, "[defaults]\nquiet = true\n")}, "--no-profile", "--mask", ".env", "--", "cat", ".env")
	if strings.Contains(r.stderr, "sbx: denied open") || !strings.Contains(r.stderr, "denied in all") {
		t.Fatalf("config quiet: %v", r)
	}
}

// fakeAgent writes an executable named name in the workspace's bin that
// prints its arguments and the variables a profile sets.
func fakeAgent(t *testing.T, b *box, name string) string {
	t.Helper()
	dir := filepath.Join(b.ws, "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	writeFile(t, p, "#!/bin/sh\necho \"args=$*\"\necho \"IS_SANDBOX=$IS_SANDBOX GEMINI_SANDBOX=$GEMINI_SANDBOX A=$A\"\necho \"proxy=$HTTPS_PROXY\"\n", 0o755)
	chownToUser(t, dir, p)
	return p
}

// TestProfileSelection: the command's basename picks a built-in profile
// (said on stderr), --profile picks one by name, --no-profile none.
func TestProfileSelection(t *testing.T) {
	b := newBox(t)
	claude := fakeAgent(t, b, "claude")
	codex := fakeAgent(t, b, "codex")
	other := fakeAgent(t, b, "other")
	env := opts{env: confEnv(t, "")}

	r := b.runOpts(env, "--", claude, "-p", "hi")
	if r.code != 0 || !strings.Contains(r.stderr, "sbx: profile claude applied") || !strings.Contains(r.stdout, "IS_SANDBOX=1 ") || !strings.Contains(r.stdout, "args=-p hi") {
		t.Fatalf("claude by basename: %v", r)
	}
	// Root and rootless alike: the profile's host starts the egress proxy.
	if !strings.Contains(r.stdout, "proxy=http://127.0.0.1:3128") {
		t.Errorf("claude's allowed host set no proxy: %v", r)
	}
	r = b.runOpts(env, "--no-profile", "--", claude)
	if r.code != 0 || strings.Contains(r.stderr, "profile") || strings.Contains(r.stdout, "IS_SANDBOX=1") || !strings.Contains(r.stdout, "proxy=\n") {
		t.Fatalf("--no-profile: %v", r)
	}
	r = b.runOpts(env, "--profile", "gemini", "--", other, "x")
	if r.code != 0 || !strings.Contains(r.stdout, "GEMINI_SANDBOX=false") || strings.Contains(r.stderr, "profile gemini applied") {
		t.Fatalf("--profile gemini: %v", r)
	}
	r = b.runOpts(env, "--", other)
	if r.code != 0 || strings.Contains(r.stderr, "profile") || strings.Contains(r.stdout, "SANDBOX=1") {
		t.Fatalf("no profile named other: %v", r)
	}
	r = b.runOpts(env, "--", codex, "exec", "hi")
	if r.code != 0 || !strings.Contains(r.stdout, `args=-c sandbox_mode="danger-full-access" exec hi`) {
		t.Fatalf("codex: %v", r)
	}
	r = b.runOpts(env, "--profile", "nosuch", "--", other)
	if r.code != 125 || !strings.Contains(r.stderr, "--profile nosuch: no such profile") {
		t.Fatalf("unknown profile: %v", r)
	}
}

// TestConfigPrecedence: flags over the profile over the config's
// defaults; a user profile of the config; a config inside the workspace
// is not read; a bad config names file, line and key.
func TestConfigPrecedence(t *testing.T) {
	b := newBox(t)
	other := fakeAgent(t, b, "other")
	conf := "[defaults]\nenv = [\"A=config\"]\n\n[profiles.mine]\ndescription = \"test\"\nenv = [\"A=profile\"]\n"
	env := opts{env: confEnv(t, conf)}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--no-profile"}, "A=config"},
		{[]string{"--profile", "mine"}, "A=profile"},
		{[]string{"--profile", "mine", "--env", "A=flag"}, "A=flag"},
	} {
		r := b.runOpts(env, append(tc.args, "--", other)...)
		if r.code != 0 || !strings.Contains(r.stdout, tc.want+"\n") {
			t.Errorf("%q: want %s: %v", tc.args, tc.want, r)
		}
	}
	// A config in the workspace (XDG_CONFIG_HOME pointing into it).
	inWS := filepath.Join(b.ws, ".cfg")
	if err := os.MkdirAll(filepath.Join(inWS, "sbx"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(inWS, "sbx", "config.toml"), "[defaults]\nenv = [\"A=repo\"]\n", 0o644)
	r := b.runOpts(opts{env: []string{"XDG_CONFIG_HOME=" + inWS}}, "--no-profile", "--", other)
	if r.code != 0 || strings.Contains(r.stdout, "A=repo") || !strings.Contains(r.stderr, "it lies inside the workspace") {
		t.Errorf("config inside the workspace: %v", r)
	}
	// A symlinked or group/world-writable config is not read (control:
	// the same content as a plain file applies, above).
	linked := t.TempDir()
	if err := os.MkdirAll(filepath.Join(linked, "sbx"), 0o755); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(t.TempDir(), "real.toml")
	writeFile(t, real, conf, 0o644)
	if err := os.Symlink(real, filepath.Join(linked, "sbx", "config.toml")); err != nil {
		t.Fatal(err)
	}
	r = b.runOpts(opts{env: []string{"XDG_CONFIG_HOME=" + linked}}, "--", other)
	if r.code != 125 || !strings.Contains(r.stderr, "a symlink is not followed") {
		t.Errorf("symlinked config: %v", r)
	}
	writable := confEnv(t, conf)
	cf := filepath.Join(strings.TrimPrefix(writable[0], "XDG_CONFIG_HOME="), "sbx", "config.toml")
	if err := os.Chmod(cf, 0o666); err != nil {
		t.Fatal(err)
	}
	r = b.runOpts(opts{env: writable}, "--", other)
	if r.code != 125 || !strings.Contains(r.stderr, "others may write it (mode 0666)") {
		t.Errorf("world-writable config: %v", r)
	}
	bad := confEnv(t, "[defaults]\nenv = [\"A=1\"]\nquite = true\n")
	r = b.runOpts(opts{env: bad}, "--", other)
	if r.code != 125 || !strings.Contains(r.stderr, "sbx/config.toml:3: unknown key defaults.quite") {
		t.Errorf("bad config: %v", r)
	}
}

// TestSettingsRun: an srt settings file as --settings: denyRead masks,
// allowWrite "." writes the workspace, denyWrite keeps a file read-only;
// the control without it shows each of those the other way round. A key
// sbx cannot honour and a later file that loosens refuse the run.
func TestSettingsRun(t *testing.T) {
	b := newBox(t)
	writeFile(t, filepath.Join(b.ws, ".env"), "S\n", 0o644)
	writeFile(t, filepath.Join(b.ws, "keep.txt"), "K\n", 0o644)
	chownToUser(t, filepath.Join(b.ws, ".env"), filepath.Join(b.ws, "keep.txt"))
	dir := t.TempDir()
	set := filepath.Join(dir, "srt.json")
	writeFile(t, set, `{"filesystem": {"denyRead": [".env"], "allowWrite": ["."], "denyWrite": ["keep.txt"]}, "network": {"allowedDomains": [], "deniedDomains": []}}`, 0o644)
	env := opts{env: confEnv(t, "")}
	const script = `cat .env; echo "read=$?"; echo n > new.txt; echo "new=$?"; echo k >> keep.txt; echo "keep=$?"`
	control := b.runOpts(env, "--no-profile", "--", "sh", "-c", script)
	for _, want := range []string{"S\nread=0", "new=2", "keep=2"} {
		if !strings.Contains(control.stdout, want) {
			t.Errorf("control lacks %q: %v", want, control)
		}
	}
	r := b.runOpts(env, "--no-profile", "--settings", set, "--", "sh", "-c", script)
	for _, want := range []string{"read=1", "new=0", "keep=2"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("--settings lacks %q: %v", want, r)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(b.ws, "keep.txt")); string(data) != "K\n" {
		t.Errorf("keep.txt changed: %q", data)
	}
	unsupported := filepath.Join(dir, "bad.json")
	writeFile(t, unsupported, `{"network": {"allowUnixSockets": ["/run/docker.sock"]}}`, 0o644)
	r = b.runOpts(env, "--no-profile", "--settings", unsupported, "--", "true")
	if r.code != 125 || !strings.Contains(r.stderr, "key network.allowUnixSockets: sbx cannot honour it") {
		t.Errorf("unsupported key: %v", r)
	}
	looser := filepath.Join(dir, "looser.json")
	writeFile(t, looser, `{"filesystem": {"allowWrite": ["/var/tmp"]}}`, 0o644)
	r = b.runOpts(env, "--no-profile", "--settings", set, "--settings", looser, "--", "true")
	if r.code != 125 || !strings.Contains(r.stderr, "this file may only tighten") {
		t.Errorf("a later file that loosens: %v", r)
	}
}

// TestProfileCommand: list shows the built-ins and the user's, show the
// flags a profile stands for.
func TestProfileCommand(t *testing.T) {
	b := newBox(t)
	env := opts{env: confEnv(t, "[profiles.mine]\ndescription = \"my tool\"\nallow_hosts = [\"api.example.com\"]\nmask = [\"~/.netrc\"]\n")}
	r := b.sbx(env, "profile", "list")
	for _, name := range []string{"claude ", "codex ", "gemini ", "opencode ", "pi ", "mine "} {
		if !strings.Contains(r.stdout, "\n"+name) && !strings.HasPrefix(r.stdout, name) {
			t.Errorf("profile list lacks %q: %v", name, r)
		}
	}
	r = b.sbx(env, "profile", "show", "mine")
	if r.code != 0 || !strings.Contains(r.stdout, "sbx run --allow-host api.example.com --mask ") || !strings.Contains(r.stdout, "/.netrc -- mine ...") {
		t.Errorf("profile show mine: %v", r)
	}
	r = b.sbx(env, "profile", "show", "codex")
	if r.code != 0 || !strings.Contains(r.stdout, `-- codex -c 'sandbox_mode="danger-full-access"' ...`) {
		t.Errorf("profile show codex: %v", r)
	}
	if r := b.sbx(env, "profile", "show", "nosuch"); r.code != 125 || !strings.Contains(r.stderr, `no profile "nosuch"`) {
		t.Errorf("profile show nosuch: %v", r)
	}
}
