package netsvc

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/sbx-sandbox/sbx/egress"
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
