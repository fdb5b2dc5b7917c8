package policy

import (
	"encoding/json"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got, as indented JSON, with testdata/name.json.
func golden(t *testing.T, name string, got any) {
	t.Helper()
	data, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, '\n')
	path := filepath.Join("testdata", name+".json")
	if *update {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./policy -update writes it)", err)
	}
	if string(want) != string(data) {
		t.Errorf("%s differs from the compiled policy:\n got: %s\nwant: %s", path, data, want)
	}
}

var proxy = netip.MustParseAddrPort("127.0.0.1:3128")

// policies are the cases every compiler is run on.
var policies = []struct {
	name string
	p    Policy
}{
	{"readonly-none", Policy{
		Files: Files{
			System: []string{"/usr", "/etc"}, Workspace: "/ws", Home: "/var/lib/h", HomeInside: "/home/u",
		},
		Network: Network{Mode: NetNone},
	}},
	{"write-loopback-mounts", Policy{
		Files: Files{
			System: []string{"/usr"}, ReadOnly: []string{"/data"}, ReadWrite: []string{"/cache"},
			Workspace: "/ws", Write: true, Home: "/var/lib/h", HomeInside: "/home/u",
			Hidden:   []string{"/ws/.env"},
			RunState: []string{"/run/sbx/runs/1/stage"},
		},
		Network: Network{Mode: NetLoopback},
	}},
	{"proxy-none", Policy{
		Files:   Files{System: []string{"/usr"}, Workspace: "/ws", Home: "/h", HomeInside: "/home/u"},
		Network: Network{Mode: NetNone, Proxy: proxy},
	}},
	{"host", Policy{
		Files:   Files{System: []string{"/usr"}, Workspace: "/ws", Write: true, Home: "/h", HomeInside: "/home/u"},
		Network: Network{Mode: NetHost, Proxy: proxy},
	}},
}

func TestLandlockGolden(t *testing.T) {
	for _, c := range policies {
		t.Run(c.name, func(t *testing.T) {
			golden(t, "landlock-"+c.name, c.p.Landlock("/.sbx/sbx"))
		})
	}
}

func TestLSMGolden(t *testing.T) {
	type rule struct {
		Kind  string
		Path  string
		Write bool
	}
	for _, c := range policies {
		t.Run(c.name, func(t *testing.T) {
			var got []rule
			for _, r := range c.p.LSM("/proc/42/root") {
				got = append(got, rule{r.Kind.String(), r.Path, r.Write})
			}
			golden(t, "lsm-"+c.name, got)
		})
	}
}

// TestTiersAgree: the Landlock and BPF LSM tiers get the same host paths
// with the same write access (the LSM names the home by its host path and
// the pseudo filesystems through the sandbox root, which Landlock sees as
// they are).
func TestTiersAgree(t *testing.T) {
	for _, c := range policies {
		t.Run(c.name, func(t *testing.T) {
			l := c.p.Landlock("")
			lsm := map[string]bool{}
			for _, r := range c.p.LSM("/root") {
				if r.Kind == LSMTree {
					lsm[r.Path] = r.Write
				}
			}
			for _, p := range l.ReadExec {
				if w, ok := lsm[p]; !ok || w {
					t.Errorf("landlock reads %s; the LSM tier: present %v, writable %v", p, ok, w)
				}
			}
			for _, p := range l.ReadWrite {
				if p == "/tmp" || p == "/proc" || p == c.p.Files.HomeInside {
					continue // pseudo filesystems and the home, named otherwise
				}
				if w, ok := lsm[p]; !ok || !w {
					t.Errorf("landlock writes %s; the LSM tier: present %v, writable %v", p, ok, w)
				}
			}
			if w := lsm[c.p.Files.Home]; !w {
				t.Errorf("the LSM tier does not let the home %s be written", c.p.Files.Home)
			}
		})
	}
}

var (
	fwd4 = netip.MustParseAddrPort("10.0.0.5:5432")
	fwd6 = netip.MustParseAddrPort("[fd00::5]:443")
)

func TestWallCompile(t *testing.T) {
	v6 := netip.MustParseAddrPort("[fd00::1]:8080")
	cases := []struct {
		name    string
		rules   WallRules
		want    WallEntry
		wantErr bool
	}{
		{"none", WallRules{}, WallEntry{}, false},
		{"proxy4", WallRules{Proxy: proxy}, WallEntry{Flags: WallProxy, ProxyFamily: afInet, ProxyAddr: [16]byte{127, 0, 0, 1}, ProxyPort: 3128}, false},
		{"proxy6", WallRules{Proxy: v6}, WallEntry{Flags: WallProxy, ProxyFamily: afInet6, ProxyAddr: v6.Addr().As16(), ProxyPort: 8080}, false},
		{"host", WallRules{HostNetwork: true}, WallEntry{Flags: WallAll}, false},
		{"loopback", WallRules{Loopback: true, NetnsCookie: 7}, WallEntry{Flags: WallLoopback, NetnsCookie: 7}, false},
		{"cookie without loopback is dropped", WallRules{NetnsCookie: 7}, WallEntry{}, false},
		{"loopback+proxy", WallRules{Loopback: true, Proxy: proxy}, WallEntry{Flags: WallLoopback | WallProxy, ProxyFamily: afInet, ProxyAddr: [16]byte{127, 0, 0, 1}, ProxyPort: 3128}, false},
		{"v4-in-v6", WallRules{Proxy: netip.MustParseAddrPort("[::ffff:127.0.0.1]:1")}, WallEntry{}, true},
		{"zone", WallRules{Proxy: netip.MustParseAddrPort("[fe80::1%eth0]:1")}, WallEntry{}, true},
		{"unspecified", WallRules{Proxy: netip.MustParseAddrPort("0.0.0.0:1")}, WallEntry{}, true},
		{"port 0", WallRules{Proxy: netip.MustParseAddrPort("127.0.0.1:0")}, WallEntry{}, true},
		{"forwards", WallRules{Loopback: true, Forwards: []netip.AddrPort{fwd4, fwd6}}, WallEntry{
			Flags: WallLoopback, NForwards: 2,
			Forwards: [MaxWallForwards]WallEndpoint{{Family: afInet, Addr: [16]byte{10, 0, 0, 5}, Port: 5432}, {Family: afInet6, Addr: fwd6.Addr().As16(), Port: 443}},
		}, false},
		{"forwards without loopback", WallRules{Forwards: []netip.AddrPort{fwd4}}, WallEntry{}, true},
		{"forwards with the host network", WallRules{HostNetwork: true, Loopback: true, Forwards: []netip.AddrPort{fwd4}}, WallEntry{}, true},
		{"forward port 0", WallRules{Loopback: true, Forwards: []netip.AddrPort{netip.MustParseAddrPort("10.0.0.5:0")}}, WallEntry{}, true},
		{"forward v4-in-v6", WallRules{Loopback: true, Forwards: []netip.AddrPort{netip.MustParseAddrPort("[::ffff:10.0.0.5]:1")}}, WallEntry{}, true},
		{"too many forwards", WallRules{Loopback: true, Forwards: make([]netip.AddrPort, MaxWallForwards+1)}, WallEntry{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.rules.Compile()
			if (err != nil) != c.wantErr {
				t.Fatalf("err %v, want error %v", err, c.wantErr)
			}
			if got != c.want {
				t.Errorf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestNetworkWall(t *testing.T) {
	cases := []struct {
		n    Network
		want WallRules
	}{
		{Network{Mode: NetNone}, WallRules{}},
		{Network{Mode: NetNone, Proxy: proxy}, WallRules{Proxy: proxy}},
		{Network{Mode: NetLoopback}, WallRules{Loopback: true, NetnsCookie: 9}},
		{Network{Mode: NetLoopback, Proxy: proxy}, WallRules{Loopback: true, NetnsCookie: 9, Proxy: proxy}},
		{Network{Mode: NetHost, Proxy: proxy}, WallRules{HostNetwork: true}},
		{Network{Mode: NetLoopback, Proxy: proxy, Forwards: []netip.AddrPort{fwd4}}, WallRules{Loopback: true, NetnsCookie: 9, Proxy: proxy, Forwards: []netip.AddrPort{fwd4}}},
		{Network{Mode: NetNone, Proxy: proxy, Forwards: []netip.AddrPort{fwd4}}, WallRules{Proxy: proxy}},
		{Network{Mode: NetHost, Forwards: []netip.AddrPort{fwd4}}, WallRules{HostNetwork: true}},
	}
	for _, c := range cases {
		if got := c.n.Wall(9); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%v proxy %v: got %+v, want %+v", c.n.Mode, c.n.Proxy, got, c.want)
		}
	}
}

func TestSeccompTable(t *testing.T) {
	seen := map[string]bool{}
	for _, n := range SeccompDenied {
		if seen[n] {
			t.Errorf("%s listed twice", n)
		}
		seen[n] = true
	}
	for _, r := range SeccompArgDenied {
		if seen[r.Name] {
			t.Errorf("%s is denied whole and by argument", r.Name)
		}
	}
	// The calls of the threat list must stay on it.
	for _, n := range []string{"mount", "ptrace", "bpf", "io_uring_setup", "userfaultfd", "keyctl", "setns", "open_by_handle_at", "perf_event_open"} {
		if !slices.Contains(SeccompDenied, n) {
			t.Errorf("%s is not denied", n)
		}
	}
	golden(t, "seccomp-denied", SeccompDenied)
}

func TestWallRulesIsZero(t *testing.T) {
	for _, c := range []struct {
		r    WallRules
		want bool
	}{
		{WallRules{}, true},
		{WallRules{Proxy: proxy}, false},
		{WallRules{HostNetwork: true}, false},
		{WallRules{Loopback: true}, false},
		{WallRules{NetnsCookie: 1}, false},
		{WallRules{Forwards: []netip.AddrPort{fwd4}}, false},
	} {
		if got := c.r.IsZero(); got != c.want {
			t.Errorf("%+v: IsZero %v, want %v", c.r, got, c.want)
		}
	}
}
