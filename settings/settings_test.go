package settings

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fixture is a working directory with files for the glob tests.
func fixture(t *testing.T) Env {
	t.Helper()
	cwd := t.TempDir()
	for _, f := range []string{".env", ".env.local", "a/key.pem", "a/b/c.key", "src/main.go"} {
		p := filepath.Join(cwd, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return Env{Home: "/home/u", Cwd: cwd}
}

// TestParse maps each key sbx honours and checks each it refuses.
func TestParse(t *testing.T) {
	env := fixture(t)
	cwd := env.Cwd
	tests := []struct {
		name  string
		json  string
		want  Policy
		error string // substring; "" for success
	}{
		{name: "empty", json: `{}`},
		{name: "enabled true", json: `{"enabled": true}`},
		{name: "enabled false", json: `{"enabled": false}`, error: "key enabled: false asks to run unsandboxed"},
		// network.allowedDomains
		{name: "allowedDomains name", json: `{"network": {"allowedDomains": ["github.com"]}}`,
			want: Policy{AllowHosts: []string{"github.com", "github.com:80"}, HostsSet: true}},
		{name: "allowedDomains wildcard and port", json: `{"network": {"allowedDomains": ["*.npmjs.org", "api.example.com:8443"]}}`,
			want: Policy{AllowHosts: []string{"*.npmjs.org", "*.npmjs.org:80", "api.example.com:8443"}, HostsSet: true}},
		{name: "allowedDomains IPv6", json: `{"network": {"allowedDomains": ["[::1]:8080"]}}`,
			want: Policy{AllowHosts: []string{"[::1]:8080"}, HostsSet: true}},
		{name: "allowedDomains empty", json: `{"network": {"allowedDomains": []}}`, want: Policy{HostsSet: true}},
		{name: "allowedDomains star", json: `{"network": {"allowedDomains": ["*"]}}`, error: `"*" would allow every host`},
		{name: "allowedDomains url", json: `{"network": {"allowedDomains": ["https://x.com/"]}}`, error: "want a host name"},
		{name: "allowedDomains not a list", json: `{"network": {"allowedDomains": "x.com"}}`, error: "network.allowedDomains"},
		// network.deniedDomains
		{name: "deniedDomains outside allowed", json: `{"network": {"allowedDomains": ["github.com"], "deniedDomains": ["evil.com", "*"]}}`,
			error: `deniedDomains "*": overlaps`},
		{name: "deniedDomains disjoint", json: `{"network": {"allowedDomains": ["github.com"], "deniedDomains": ["evil.com"]}}`,
			want: Policy{AllowHosts: []string{"github.com", "github.com:80"}, HostsSet: true, Denied: []string{"evil.com"}}},
		{name: "deniedDomains under wildcard", json: `{"network": {"allowedDomains": ["*.github.com"], "deniedDomains": ["gist.github.com"]}}`,
			error: `deniedDomains "gist.github.com": overlaps allowedDomains "*.github.com"`},
		// accepted because sbx is as strict
		{name: "strictAllowlist", json: `{"network": {"strictAllowlist": false}}`},
		{name: "allowLocalBinding", json: `{"network": {"allowLocalBinding": true}}`},
		{name: "mandatoryDenySearchDepth", json: `{"mandatoryDenySearchDepth": 5}`},
		{name: "allowPty", json: `{"allowPty": true}`},
		// filesystem
		{name: "denyRead", json: `{"filesystem": {"denyRead": ["~/.ssh", "/etc/x", "rel/f", {"path": "lit*", "literal": true}]}}`,
			want: Policy{Mask: []string{"/home/u/.ssh", "/etc/x", cwd + "/rel/f", cwd + "/lit*"}}},
		{name: "denyRead name glob at any depth", json: `{"filesystem": {"denyRead": ["*.pem", "*.key", ".env.*"]}}`,
			want: Policy{Mask: []string{cwd + "/a/key.pem", cwd + "/a/b/c.key", cwd + "/.env.local"}}},
		{name: "denyWrite path glob", json: `{"filesystem": {"denyWrite": ["a/*.pem", ".env"]}}`,
			want: Policy{Protect: []string{cwd + "/a/key.pem", cwd + "/.env"}}},
		{name: "allowWrite", json: `{"filesystem": {"allowWrite": [".", "/tmp", "~/.cache"]}}`,
			want: Policy{Writable: []string{cwd, "/home/u/.cache"}, WritableSet: true}},
		{name: "glob **", json: `{"filesystem": {"denyRead": ["**/*.pem"]}}`, error: `"**" is not supported`},
		{name: "~user", json: `{"filesystem": {"denyRead": ["~root/x"]}}`, error: "~user is not supported"},
		{name: "entry object without literal", json: `{"filesystem": {"denyRead": [{"path": "x"}]}}`, error: `want a path, or {"path"`},
		{name: "entry object unknown key", json: `{"filesystem": {"denyRead": [{"path": "x", "literal": true, "mode": 1}]}}`, error: `want a path, or {"path"`},
		{name: "empty path", json: `{"filesystem": {"denyWrite": [""]}}`, error: "empty path"},
		// refused unless neutral
		{name: "allowRead empty", json: `{"filesystem": {"allowRead": []}}`},
		{name: "disabled false", json: `{"filesystem": {"disabled": false}}`},
		{name: "allowGitConfig false", json: `{"filesystem": {"allowGitConfig": false}}`},
		{name: "unknown top", json: `{"bogus": 1}`, error: "key bogus: unknown"},
		{name: "unknown network", json: `{"network": {"allowedDomain": []}}`, error: "key network.allowedDomain: unknown"},
		{name: "unknown filesystem", json: `{"filesystem": {"denyread": []}}`, error: "key filesystem.denyread: unknown"},
		{name: "not an object", json: `[]`, error: "want an object"},
		{name: "trailing", json: `{} {}`, error: "trailing data"},
	}
	refused := map[string]string{
		"filesystem.allowRead":            `["/x"]`,
		"filesystem.disabled":             `true`,
		"filesystem.allowGitConfig":       `true`,
		"network.deniedDomainReasons":     `{"a.com": "no"}`,
		"network.deniedResolvedAddresses": `["10.0.0.0/8"]`,
		"network.allowUnixSockets":        `["/run/docker.sock"]`,
		"network.allowAllUnixSockets":     `true`,
		"network.allowMachLookup":         `["com.apple.x"]`,
		"network.httpProxyPort":           `8080`,
		"network.socksProxyPort":          `1080`,
		"network.mitmProxy":               `{"socketPath": "/x", "domains": ["a.com"]}`,
		"network.parentProxy":             `{"url": "http://p"}`,
		"network.filterRequest":           `"f"`,
		"network.tlsTerminate":            `{"domains": ["a.com"]}`,
		"network.allowPlaintextHeaderSet": `["x"]`,
		"network.stripResponseHeaders":    `["x"]`,
		"network.ambiguousRequestTarget":  `"allow"`,
		"network.refuseOpaqueTunnels":     `true`,
		"network.requireHostMatch":        `true`,
		"credentials":                     `{"envVars": ["K"]}`,
		"ignoreViolations":                `{"*": ["/x"]}`,
		"enableWeakerNestedSandbox":       `true`,
		"allowNestedUserNamespaces":       `true`,
		"enableWeakerNetworkIsolation":    `true`,
		"allowAppleEvents":                `true`,
		"ripgrep":                         `{"command": "rg"}`,
		"seccomp":                         `{"bpfPath": "/x"}`,
		"bwrapPath":                       `"/usr/bin/bwrap"`,
		"socatPath":                       `"/usr/bin/socat"`,
		"javaAgentJarPath":                `"/x.jar"`,
		"windows":                         `{"x": 1}`,
		"git":                             `{"safeDirectories": ["/x"]}`,
	}
	if len(refused) != len(unsupported) {
		t.Fatalf("%d refused keys tested, %d known", len(refused), len(unsupported))
	}
	for key, val := range refused {
		if _, ok := unsupported[key]; !ok {
			t.Fatalf("test names %s, which is not in unsupported", key)
		}
		j := `{"` + key + `": ` + val + `}`
		if sect, k, ok := strings.Cut(key, "."); ok {
			j = `{"` + sect + `": {"` + k + `": ` + val + `}}`
		}
		tests = append(tests, struct {
			name  string
			json  string
			want  Policy
			error string
		}{name: "refused " + key, json: j, error: "key " + key + ": sbx cannot honour it"})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.json), env)
			if tc.error != "" {
				if err == nil || !strings.Contains(err.Error(), tc.error) {
					t.Fatalf("Parse(%s) error = %v, want %q", tc.json, err, tc.error)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%s): %v", tc.json, err)
			}
			if !equal(got, tc.want) {
				t.Fatalf("Parse(%s) =\n %+v, want\n %+v", tc.json, got, tc.want)
			}
		})
	}
}

func equal(a, b Policy) bool {
	sorted := func(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }
	return slices.Equal(sorted(a.AllowHosts), sorted(b.AllowHosts)) && a.HostsSet == b.HostsSet &&
		slices.Equal(sorted(a.Denied), sorted(b.Denied)) && slices.Equal(sorted(a.Mask), sorted(b.Mask)) &&
		slices.Equal(sorted(a.Writable), sorted(b.Writable)) && a.WritableSet == b.WritableSet &&
		slices.Equal(sorted(a.Protect), sorted(b.Protect))
}

// realEnv is a home and a working directory (with src) that exist.
func realEnv(t *testing.T) Env {
	t.Helper()
	dir := t.TempDir()
	env := Env{Home: filepath.Join(dir, "home"), Cwd: filepath.Join(dir, "ws")}
	for _, d := range []string{env.Home, filepath.Join(env.Cwd, "src")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return env
}

// TestMergeTightenOnly: a later file adds denials and may narrow, never
// widen, the allow lists.
func TestMergeTightenOnly(t *testing.T) {
	env := realEnv(t)
	parse := func(j string) Policy {
		t.Helper()
		p, err := Parse([]byte(j), env)
		if err != nil {
			t.Fatal(err)
		}
		p.Files = []string{"f"}
		return p
	}
	base := parse(`{"network": {"allowedDomains": ["*.github.com", "npmjs.org"]}, "filesystem": {"allowWrite": [".", "/tmp"], "denyRead": ["~/.ssh"]}}`)
	tests := []struct {
		name, later string
		want        Policy
		error       string
	}{
		{name: "nothing", later: `{}`, want: base},
		{name: "narrower hosts", later: `{"network": {"allowedDomains": ["api.github.com"]}}`,
			want: Policy{AllowHosts: []string{"api.github.com", "api.github.com:80"}, HostsSet: true, Writable: base.Writable, WritableSet: true, Mask: base.Mask}},
		{name: "no hosts at all", later: `{"network": {"allowedDomains": []}}`,
			want: Policy{HostsSet: true, Writable: base.Writable, WritableSet: true, Mask: base.Mask}},
		{name: "wider hosts", later: `{"network": {"allowedDomains": ["evil.com"]}}`, error: "network.allowedDomains evil.com: not allowed by the earlier settings (f), and this file may only tighten"},
		{name: "other port", later: `{"network": {"allowedDomains": ["npmjs.org:8443"]}}`, error: "npmjs.org:8443: not allowed"},
		{name: "narrower write", later: `{"filesystem": {"allowWrite": ["src"]}}`,
			want: Policy{AllowHosts: base.AllowHosts, HostsSet: true, Writable: []string{env.Cwd + "/src"}, WritableSet: true, Mask: base.Mask}},
		{name: "wider write", later: `{"filesystem": {"allowWrite": ["~"]}}`, error: "filesystem.allowWrite " + env.Home + ": not writable under the earlier settings (f)"},
		{name: "more denials", later: `{"filesystem": {"denyRead": ["~/.aws"], "denyWrite": ["` + env.Cwd + `/.env"]}, "network": {"deniedDomains": ["evil.com"]}}`,
			want: Policy{AllowHosts: base.AllowHosts, HostsSet: true, Writable: base.Writable, WritableSet: true,
				Mask: []string{env.Home + "/.ssh", env.Home + "/.aws"}, Protect: []string{env.Cwd + "/.env"}, Denied: []string{"evil.com"}}},
		{name: "denial inside the allowed", later: `{"network": {"deniedDomains": ["api.github.com"]}}`, error: "overlaps allowedDomains"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Merge(base, parse(tc.later))
			if tc.error != "" {
				if err == nil || !strings.Contains(err.Error(), tc.error) {
					t.Fatalf("Merge error = %v, want %q", err, tc.error)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !equal(got, tc.want) {
				t.Fatalf("Merge =\n %+v, want\n %+v", got, tc.want)
			}
		})
	}
}

// TestMergeWithoutBase: a tighten-only file with nothing before it (pi's
// project file without a global one) may deny, not allow.
func TestMergeWithoutBase(t *testing.T) {
	env := realEnv(t)
	for j, want := range map[string]string{
		`{"filesystem": {"allowWrite": ["."]}}`:           "not writable under any earlier settings file",
		`{"network": {"allowedDomains": ["github.com"]}}`: "not allowed by any earlier settings file",
		`{"filesystem": {"denyWrite": ["x"]}}`:            "",
	} {
		p, err := Parse([]byte(j), env)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Merge(Policy{}, p)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("Merge(none, %s) = %v, want %q", j, err, want)
		}
	}
}

// TestPiExtensionDefaults reads pi's sandbox extension's own default
// settings (examples/extensions/sandbox/index.ts of
// @earendil-works/pi-coding-agent 0.74.2): every key maps.
func TestPiExtensionDefaults(t *testing.T) {
	env := fixture(t)
	data, err := os.ReadFile(filepath.Join("testdata", "pi-default.json"))
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(data, env)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(p.AllowHosts, "github.com") || !slices.Contains(p.Mask, "/home/u/.ssh") ||
		!slices.Contains(p.Protect, env.Cwd+"/.env") || !slices.Contains(p.Protect, env.Cwd+"/a/key.pem") ||
		!slices.Equal(p.Writable, []string{env.Cwd}) {
		t.Fatalf("pi defaults mapped to %+v", p)
	}
}

// TestLoadRefusesPlanted: a project's settings file lies where the sandbox
// can write, so what it plants there is refused without being followed or
// blocking on: a symlink (to a file that Load would read fine directly), a
// FIFO, a directory. The control loads the same content from a regular file.
func TestLoadRefusesPlanted(t *testing.T) {
	dir := t.TempDir()
	env := Env{Home: dir, Cwd: dir}
	real := filepath.Join(dir, "real.json")
	if err := os.WriteFile(real, []byte(`{"network":{"allowedDomains":["example.com"]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(real, env); err != nil {
		t.Fatalf("control: a regular file: %v", err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "dir.json")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"symlink", link, "a symlink is not followed"},
		{"fifo", fifo, "not a regular file"},
		{"directory", sub, "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { _, err := Load(tc.path, env); done <- err }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Load(%s) = %v, want an error saying %q", tc.name, err, tc.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("Load(%s) blocked", tc.name)
			}
		})
	}
}
