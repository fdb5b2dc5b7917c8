package runner

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/egress"
	"github.com/sbx-sandbox/sbx/gate"
)

// TestProxyHint: --allow-host is advised only for a destination no rule
// allows; a name that was allowed but resolved to an address the guard
// refuses is not told to add the rule it has, and limits or malformed
// requests get no hint at all.
func TestProxyHint(t *testing.T) {
	cases := []struct {
		d          egress.Denial
		want, must string // want: a part of the hint ("" for none); must: never in it
	}{
		{egress.Denial{Host: "evil.test", Port: 443, Reason: "not allowed", Kind: egress.DenyNotAllowed},
			"run sbx with --allow-host evil.test:443", ""},
		{egress.Denial{Host: "api.test", Port: 443, Reason: "resolves to the host's own address 192.0.2.2", Kind: egress.DenyAddress},
			"its name resolves to the host's own address 192.0.2.2", "--allow-host api.test"},
		{egress.Denial{Host: "api.test", Port: 443, Reason: "resolves to private address 10.0.0.1", Kind: egress.DenyAddress},
			"DNS rebinding", "run sbx with --allow-host api.test"},
		{egress.Denial{Host: "api.test", Port: 443, Reason: "too many tunnels: limit 256", Kind: egress.DenyOther}, "", ""},
		{egress.Denial{Host: "127.1", Port: 443, Reason: "invalid host", Kind: egress.DenyOther}, "", ""},
	}
	for _, c := range cases {
		h := proxyHint(c.d)
		switch {
		case c.want == "" && h != "":
			t.Errorf("%v: hint %q, want none", c.d, h)
		case c.want != "" && !strings.Contains(h, c.want):
			t.Errorf("%v: hint %q, want %q in it", c.d, h, c.want)
		case c.must != "" && strings.Contains(h, c.must):
			t.Errorf("%v: hint %q must not say %q", c.d, h, c.must)
		}
	}
}

// TestDNSRefusalHints: "no DNS in the sandbox" only when the run has no
// --allow-host; with one, a name no rule allows is "not allowed", and an
// allowed name refused because the table of forwarder addresses is full
// says so, without claiming there is no DNS or advising --allow-host.
func TestDNSRefusalHints(t *testing.T) {
	reason, hint := noNames("example.com")
	if reason != "no DNS in the sandbox" || !strings.Contains(hint, "the sandbox has no DNS") {
		t.Errorf("no --allow-host: %q %q", reason, hint)
	}
	allow, err := egress.ParseAllowlist([]string{"*.wild.test", "api.test"})
	if err != nil {
		t.Fatal(err)
	}
	f := newForwarders(nil, nil, allow, &bytes.Buffer{}, 0)
	reason, hint = f.refusal("evil.test")
	if reason != "not allowed" || !strings.Contains(hint, "--allow-host evil.test[:PORT]") || strings.Contains(hint, "no DNS") {
		t.Errorf("a name not allowed: %q %q", reason, hint)
	}
	// Not full: an allowed name that got no address is not the table.
	reason, hint = f.refusal("a.wild.test")
	if strings.Contains(reason+hint, "no DNS") || strings.Contains(hint, "--allow-host") || strings.Contains(reason, "at most") {
		t.Errorf("an allowed name, table not full: %q %q", reason, hint)
	}
	for i := range maxForwardNames {
		f.names[fmt.Sprintf("n%d.wild.test", i)] = forwardBase
	}
	reason, hint = f.refusal("late.wild.test")
	if !strings.Contains(reason, fmt.Sprintf("at most %d allowed names", maxForwardNames)) || strings.Contains(reason+hint, "no DNS") || strings.Contains(hint, "--allow-host") {
		t.Errorf("full table: %q %q", reason, hint)
	}
	// A name nothing allows is still "not allowed" with a full table.
	if reason, _ := f.refusal("evil.test"); reason != "not allowed" {
		t.Errorf("full table, a name not allowed: %q", reason)
	}
}

// TestReporterEscapes: a denial's target, comm and reason reach stderr
// escaped, and so does the hint naming the target: no control, C1 or bidi
// character of the sandbox's gets through raw.
func TestReporterEscapes(t *testing.T) {
	var log bytes.Buffer
	r := newReporter(&log, nil)
	r.deferLines = false
	bad := "x\x1b]0;pwned\a\r\nsbx: fake\u202e\u0085.test"
	r.add(gate.Violation{Op: "connect", Target: bad + ":443", Pid: 1, Comm: "c\x1bm", Errno: "EACCES", Tier: "netwall"})
	r.addHinted(gate.Violation{Op: "resolve", Target: bad, Errno: "NXDOMAIN", Tier: "dns", Reason: "not allowed"}, "")
	r.add(gate.Violation{Op: "open", Target: "/w/\x07bell", Pid: 2, Comm: "\u202ecomm", Errno: "EACCES", Tier: "landlock"})
	out := log.String()
	for _, c := range out {
		if c != '\n' && (c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f) || c == 0x202e) {
			t.Fatalf("raw %U in the log:\n%q", c, out)
		}
	}
	esc := `x\x1b]0;pwned\x07\x0d\x0asbx: fake\u202e\u0085.test`
	for _, want := range []string{
		"sbx: denied connect " + esc + ":443 (1 c\\x1bm)\n",
		"sbx: to let the program reach " + esc + ":443, run sbx with --allow-host " + esc + ":443\n",
		"sbx: denied resolve " + esc + " (not allowed)\n",
		"sbx: denied open /w/\\x07bell (2 \\u202ecomm)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n"); n != 4 {
		t.Errorf("%d lines, want 4:\n%s", n, out)
	}
}

// TestWallConnectHint: the wall's refused connect advises --allow-host
// only for a destination no rule allows; one that is allowed (dialed past
// the proxy) is told to use the proxy instead.
func TestWallConnectHint(t *testing.T) {
	allow, err := egress.ParseAllowlist([]string{"10.0.0.5:5432", "[2001:db8::1]:443", "api.test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		target, want, must string
	}{
		{"10.0.0.5:5432", "only through sbx's proxy", "--allow-host"},
		{"[2001:db8::1]:443", "only through sbx's proxy", "--allow-host"},
		{"10.0.0.5:5433", "run sbx with --allow-host 10.0.0.5:5433", ""},
		{"10.0.0.6:5432", "run sbx with --allow-host 10.0.0.6:5432", ""},
	} {
		h := netHint(gate.Violation{Op: "connect", Target: c.target}, allow)
		if !strings.Contains(h, c.want) || (c.must != "" && strings.Contains(h, c.must)) {
			t.Errorf("connect %s: hint %q, want %q and not %q", c.target, h, c.want, c.must)
		}
	}
	if h := netHint(gate.Violation{Op: "socket", Target: "AF_UNIX SOCK_STREAM"}, nil); h != "" {
		t.Errorf("a unix socket got the network hint %q", h)
	}
	if h := netHint(gate.Violation{Op: "open", Target: "/etc/shadow"}, nil); h != "" {
		t.Errorf("a file denial got the network hint %q", h)
	}
}
