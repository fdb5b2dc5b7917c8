package netsvc

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/egress"
	"github.com/sbx-sandbox/sbx/policy"
)

func TestHostsResolver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hosts")
	hosts := "# test hosts\n127.0.0.1 api.test  Other.test\n::1 api.test\n169.254.169.254 meta.test # comment\nnot-an-address x.test\n10.0.0.1\n"
	if err := os.WriteFile(path, []byte(hosts), 0o644); err != nil {
		t.Fatal(err)
	}
	r := hostsResolver(path)
	for _, tc := range []struct {
		network, host string
		want          []string // nil: an error
	}{
		{"ip", "api.test", []string{"127.0.0.1", "::1"}},
		{"ip4", "api.test", []string{"127.0.0.1"}},
		{"ip6", "api.test", []string{"::1"}},
		{"ip", "API.TEST.", []string{"127.0.0.1", "::1"}},
		{"ip", "other.test", []string{"127.0.0.1"}},
		{"ip", "meta.test", []string{"169.254.169.254"}},
		{"ip6", "meta.test", nil},
		{"ip", "x.test", nil},
		{"ip", "comment", nil},
		{"ip", "missing.test", nil},
	} {
		got, err := r.LookupNetIP(context.Background(), tc.network, tc.host)
		if tc.want == nil {
			if err == nil {
				t.Errorf("%s %s = %v, want an error", tc.network, tc.host, got)
			}
			continue
		}
		var want []netip.Addr
		for _, a := range tc.want {
			want = append(want, netip.MustParseAddr(a))
		}
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s %s = %v, %v; want %v", tc.network, tc.host, got, err, want)
		}
	}
	if _, err := hostsResolver(filepath.Join(t.TempDir(), "none")).LookupNetIP(context.Background(), "ip", "a.test"); err == nil {
		t.Errorf("missing hosts file: want an error")
	}
}

// TestProxyEnv: every variable curl, git, Python, Go and Node read, in both
// cases where they differ, pointing at the proxy; the sandbox's own
// loopback bypasses it, except the loopback hosts an allow rule names (a
// NO_PROXY entry would send their clients to the sandbox's empty loopback).
func TestProxyEnv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		allow   []string
		noProxy string // "" : no NO_PROXY at all
	}{
		{"remote only", []string{"api.example.com"}, "localhost,127.0.0.1,::1"},
		{"host loopback v4", []string{"127.0.0.1:11434"}, "localhost,::1"},
		{"host loopback v6", []string{"[::1]:8080"}, "localhost,127.0.0.1"},
		{"localhost by name", []string{"localhost:11434", "127.0.0.1:11434"}, "::1"},
		{"every loopback", []string{"localhost:1", "127.0.0.1:1", "[::1]:1"}, ""},
		{"other loopback address", []string{"127.0.0.2:80"}, "localhost,127.0.0.1,::1"},
		{"wildcard", []string{"*.example.com"}, "localhost,127.0.0.1,::1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			allow, err := egress.ParseAllowlist(tc.allow)
			if err != nil {
				t.Fatal(err)
			}
			env := map[string]string{}
			for _, kv := range ProxyEnv(allow) {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
			u := "http://" + ProxyAddr.String()
			for _, k := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"} {
				if env[k] != u {
					t.Errorf("%s = %q, want %q", k, env[k], u)
				}
			}
			for _, k := range []string{"NO_PROXY", "no_proxy"} {
				if v, ok := env[k]; v != tc.noProxy || ok != (tc.noProxy != "") {
					t.Errorf("%s = %q (set: %v), want %q", k, v, ok, tc.noProxy)
				}
			}
			if env["NODE_USE_ENV_PROXY"] != "1" {
				t.Errorf("NODE_USE_ENV_PROXY = %q, want 1", env["NODE_USE_ENV_PROXY"])
			}
			want := 9
			if tc.noProxy == "" {
				want = 7
			}
			if len(env) != want {
				t.Errorf("proxyEnv has %d variables, want %d: %v", len(env), want, env)
			}
		})
	}
}

// TestIPForwards: the allowed IP addresses that get a forwarder at the same
// address and port, split into loopback and beyond, in rule order; the
// proxy's endpoint, the canary's outside addresses, multicast addresses and
// names get none. The wall's exceptions are the first
// policy.MaxWallForwards beyond loopback.
func TestIPForwards(t *testing.T) {
	many := []string{"api.example.com", "127.0.0.1:3128", "192.0.2.1:443", "[2001:db8::1]:443", "224.0.0.1:5353", "127.0.0.1:11434", "[::1]:8080"}
	for i := 1; i <= policy.MaxWallForwards+2; i++ {
		many = append(many, fmt.Sprintf("10.0.0.%d:5432", i))
	}
	allow, err := egress.ParseAllowlist(many)
	if err != nil {
		t.Fatal(err)
	}
	local, beyond := ipForwards(allow)
	if got, want := fmt.Sprint(local), "[127.0.0.1:11434 [::1]:8080]"; got != want {
		t.Errorf("loopback: got %s, want %s", got, want)
	}
	if len(beyond) != policy.MaxWallForwards+2 || beyond[0] != netip.MustParseAddrPort("10.0.0.1:5432") {
		t.Errorf("beyond loopback: got %v", beyond)
	}
	wall := WallForwards(allow)
	if len(wall) != policy.MaxWallForwards || wall[policy.MaxWallForwards-1] != beyond[policy.MaxWallForwards-1] {
		t.Errorf("wall: got %v, want the first %d of %v", wall, policy.MaxWallForwards, beyond)
	}
	if _, err := (policy.WallRules{Loopback: true, Forwards: wall}).Compile(); err != nil {
		t.Errorf("the wall's forwards do not compile: %v", err)
	}
}
