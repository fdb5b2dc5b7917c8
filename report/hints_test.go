package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/egress"
)

// TestReporterEscapes: a denial's target, comm and reason reach stderr
// escaped, and so does the hint naming the target: no control, C1 or bidi
// character of the sandbox's gets through raw.
func TestReporterEscapes(t *testing.T) {
	var log bytes.Buffer
	r := New(&log, nil)
	r.deferLines = false
	bad := "x\x1b]0;pwned\a\r\nsbx: fake\u202e\u0085.test"
	r.Add(Violation{Op: "connect", Target: bad + ":443", Pid: 1, Comm: "c\x1bm", Errno: "EACCES", Tier: "netwall"})
	r.AddHinted(Violation{Op: "resolve", Target: bad, Errno: "NXDOMAIN", Tier: "dns", Reason: "not allowed"}, "")
	r.Add(Violation{Op: "open", Target: "/w/\x07bell", Pid: 2, Comm: "\u202ecomm", Errno: "EACCES", Tier: "landlock"})
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
		h := NetHint(Violation{Op: "connect", Target: c.target}, allow)
		if !strings.Contains(h, c.want) || (c.must != "" && strings.Contains(h, c.must)) {
			t.Errorf("connect %s: hint %q, want %q and not %q", c.target, h, c.want, c.must)
		}
	}
	if h := NetHint(Violation{Op: "socket", Target: "AF_UNIX SOCK_STREAM"}, nil); h != "" {
		t.Errorf("a unix socket got the network hint %q", h)
	}
	if h := NetHint(Violation{Op: "open", Target: "/etc/shadow"}, nil); h != "" {
		t.Errorf("a file denial got the network hint %q", h)
	}
}
