package profile

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func ptr[T any](v T) *T { return &v }

func TestMerge(t *testing.T) {
	tests := []struct {
		name   string
		layers []Profile
		want   []string // Flags() of the result
	}{
		{"empty", nil, nil},
		{
			"lists add up, duplicates once",
			[]Profile{{AllowHosts: []string{"a.com"}, Env: []string{"K"}}, {AllowHosts: []string{"b.com", "a.com"}, Env: []string{"K", "X=1"}}},
			[]string{"--allow-host", "a.com", "--allow-host", "b.com", "--env", "K", "--env", "X=1"},
		},
		{
			"later scalar wins",
			[]Profile{{Memory: "512m", CPUs: ptr(1.0), Pids: ptr(int64(256)), Net: "none"}, {Memory: "4g", Net: "loopback"}},
			[]string{"--net", "loopback", "--memory", "4g", "--cpus", "1", "--pids", "256"},
		},
		{
			"unset scalar keeps the earlier one",
			[]Profile{{Memory: "2g", Quiet: ptr(true)}, {}, {Home: "tmp"}},
			[]string{"--home", "tmp", "--memory", "2g", "--quiet"},
		},
		{
			"false overrides true",
			[]Profile{{Write: ptr(true), Quiet: ptr(true)}, {Write: ptr(false), Quiet: ptr(false)}},
			nil,
		},
		{
			"built-in < config < profile < flags",
			[]Profile{
				{Memory: "7g", CPUs: ptr(2.0), Pids: ptr(int64(4096))},    // built-in
				{Memory: "3g", Mask: []string{"/ws/.env"}},                // config defaults
				{AllowHosts: []string{"api.anthropic.com"}, Memory: "5g"}, // profile
				{Memory: "1g", Mask: []string{"/ws/key.pem"}},             // flags
			},
			[]string{"--allow-host", "api.anthropic.com", "--mask", "/ws/.env", "--mask", "/ws/key.pem", "--memory", "1g", "--cpus", "2", "--pids", "4096"},
		},
		{
			"paths and settings",
			[]Profile{{ReadOnly: []string{"/a"}, ReadWrite: []string{"/b"}, Protect: []string{"/ws/x"}, Settings: []string{"/s.json"}, Timeout: "5m", Policy: "landlock"}},
			[]string{"--policy", "landlock", "--ro", "/a", "--rw", "/b", "--protect", "/ws/x", "--settings", "/s.json", "--timeout", "5m"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Merge(tc.layers...).Flags(nil)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Flags() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestMergeDoesNotAlias(t *testing.T) {
	a := Profile{Env: []string{"A"}}
	m := Merge(a)
	m.Env[0] = "B"
	if a.Env[0] != "A" {
		t.Fatal("Merge shares its input's lists")
	}
	b, _ := Builtin("claude")
	b.AllowHosts[0] = "evil.example"
	if c, _ := Builtin("claude"); c.AllowHosts[0] == "evil.example" {
		t.Fatal("Builtin returns the built-in's own lists")
	}
}

func TestExpand(t *testing.T) {
	p := Profile{ReadOnlyIfExists: []string{"~/.claude.json", "/etc/x", "rel"}, Home: "~/h", Mask: []string{"~"}}
	got := p.Expand("/home/u/")
	want := []string{"/home/u/.claude.json", "/etc/x", "rel"}
	if !slices.Equal(got.ReadOnlyIfExists, want) || got.Home != "/home/u/h" || got.Mask[0] != "/home/u/" {
		t.Fatalf("Expand = %+v", got)
	}
	if got := ExpandPath("~/x", ""); got != "~/x" {
		t.Fatalf("ExpandPath without a home = %q, want it unchanged", got)
	}
	if (Profile{Home: "tmp"}).Expand("/h").Home != "tmp" {
		t.Fatal("home tmp expanded")
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		p    Profile
		want string
	}{
		{Profile{Env: []string{"OK", "A_1=x y"}}, ""},
		{Profile{Env: []string{"1A"}}, `env: "1A"`},
		{Profile{Env: []string{"A B=1"}}, `env: "A B=1"`},
		{Profile{Net: "wifi"}, `net: "wifi"`},
		{Profile{Policy: "apparmor"}, `policy: "apparmor"`},
		{Profile{Mask: []string{""}}, "mask: empty path"},
	} {
		err := tc.p.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.p, err, tc.want)
		}
	}
	for _, b := range Builtins() {
		if err := b.Validate(); err != nil {
			t.Errorf("built-in %s: %v", b.Name, err)
		}
	}
}

// TestBuiltinsGolden pins what each built-in profile stands for (the
// flags "sbx profile show" prints, for the home /home/u).
func TestBuiltinsGolden(t *testing.T) {
	var b strings.Builder
	for _, p := range Builtins() {
		p = p.Expand("/home/u")
		b.WriteString("# " + p.Name + ": " + p.Description + "\n")
		b.WriteString(strings.Join(p.Flags(nil), " "))
		if len(p.Args) > 0 {
			b.WriteString(" -- " + p.Name + " " + strings.Join(p.Args, " "))
		}
		b.WriteString("\n")
	}
	golden := filepath.Join("testdata", "builtins.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("built-ins changed (go test -update to accept):\n%s", b.String())
	}
}
