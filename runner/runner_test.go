package runner

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/hostfs"
	"github.com/sbx-sandbox/sbx/invoker"
)

func TestCleanEnv(t *testing.T) {
	host := []string{
		"PATH=/usr/bin:/bin", "HOME=/root", "TERM=xterm", "LANG=C.UTF-8", "LC_TIME=de_DE",
		"TZ=UTC", "AWS_SECRET_ACCESS_KEY=s", "GITHUB_TOKEN=t", "SSH_AUTH_SOCK=/tmp/agent", "FOO=bar",
	}
	for _, tc := range []struct {
		name    string
		env     []string
		want    []string
		wantErr string
	}{
		{"defaults", nil, []string{
			"PATH=/usr/bin:/bin", "HOME=/home/al", "USER=al", "LOGNAME=al", "TERM=xterm",
			"LANG=C.UTF-8", "LC_TIME=de_DE", "TZ=UTC", "SBX=1", "npm_config_fetch_retries=0",
		}, ""},
		{"pass and set", []string{"FOO", "GITHUB_TOKEN", "X=1", "MISSING"}, []string{
			"PATH=/usr/bin:/bin", "HOME=/home/al", "USER=al", "LOGNAME=al", "TERM=xterm",
			"LANG=C.UTF-8", "LC_TIME=de_DE", "TZ=UTC", "SBX=1", "npm_config_fetch_retries=0", "FOO=bar", "GITHUB_TOKEN=t", "X=1",
		}, ""},
		{"override", []string{"TERM=dumb"}, nil, ""},
		{"bad name", []string{"1X=2"}, nil, "invalid --env"},
		{"empty name", []string{"=2"}, nil, "invalid --env"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &Options{HostEnv: host, Env: tc.env}
			got, err := cleanEnv(o, invoker.User{Name: "al"}, "/home/al")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, kv := range got {
				for _, secret := range []string{"AWS_SECRET", "SSH_AUTH_SOCK", "HOME=/root"} {
					if strings.HasPrefix(kv, secret) && tc.name != "pass and set" {
						t.Errorf("leaked %s", kv)
					}
				}
			}
			if tc.want != nil && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("env =\n%q\nwant\n%q", got, tc.want)
			}
			if tc.name == "override" && !contains(got, "TERM=dumb") {
				t.Errorf("--env TERM=dumb not applied: %q", got)
			}
		})
	}
}

func contains(l []string, s string) bool {
	for _, v := range l {
		if v == s {
			return true
		}
	}
	return false
}

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		p, root string
		want    bool
	}{
		{"/w/a", "/w/a", true},
		{"/w/a/b", "/w/a", true},
		{"/w/ab", "/w/a", false},
		{"/w/a-evil", "/w/a", false},
		{"/w", "/w/a", false},
		{"/anything", "/", true},
		{"/w/a/b", "/w/a/", true}, // a root with a trailing slash
	} {
		if got := hostfs.Under(tc.p, tc.root); got != tc.want {
			t.Errorf("hostfs.Under(%q, %q) = %v, want %v", tc.p, tc.root, got, tc.want)
		}
	}
}

func TestParsePolicy(t *testing.T) {
	for in, want := range map[string]Policy{"": PolicyAuto, "auto": PolicyAuto, "landlock": PolicyLandlock, "bpf": PolicyBPF} {
		if got, err := ParsePolicy(in); err != nil || got != want {
			t.Errorf("ParsePolicy(%q) = %q, %v", in, got, err)
		}
	}
	for _, bad := range []string{"none", "BPF", "off"} {
		if _, err := ParsePolicy(bad); err == nil {
			t.Errorf("ParsePolicy(%q) accepted", bad)
		}
	}
}
