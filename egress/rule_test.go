package egress

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseRule(t *testing.T) {
	good := []struct{ in, want string }{
		{"api.example.com", "api.example.com:443"},
		{"api.example.com:8443", "api.example.com:8443"},
		{"API.Example.COM.", "api.example.com:443"},
		{"*.example.com", "*.example.com:443"},
		{"*.example.com:80", "*.example.com:80"},
		{"xn--bcher-kva.example", "xn--bcher-kva.example:443"},
		{"localhost", "localhost:443"},
		{"a-b.c1.example", "a-b.c1.example:443"},
		{"10.1.2.3:443", "10.1.2.3:443"},
		{"10.1.2.3", "10.1.2.3:443"},
		{"[::1]:8080", "[::1]:8080"},
		{"[::1]", "[::1]:443"},
		{"::1", "[::1]:443"},
		{"[2001:DB8::1]:1", "[2001:db8::1]:1"},
		{"[::ffff:10.1.2.3]:443", "10.1.2.3:443"},
		{"example.com:65535", "example.com:65535"},
	}
	for _, c := range good {
		r, err := ParseRule(c.in)
		if err != nil {
			t.Errorf("ParseRule(%q): %v", c.in, err)
			continue
		}
		if got := r.String(); got != c.want {
			t.Errorf("ParseRule(%q) = %s, want %s", c.in, got, c.want)
		}
		// String's form parses back to the same rule.
		if r2, err := ParseRule(r.String()); err != nil || r2 != r {
			t.Errorf("ParseRule(%q).String() = %q does not parse back: %v", c.in, r.String(), err)
		}
	}

	bad := []struct{ in, want string }{
		{"", "empty"},
		{"https://api.example.com", "not a URL"},
		{"api.example.com/v1", "no paths"},
		{"10.0.0.0/8", "CIDR"},
		{"user@example.com", "HOST[:PORT]"},
		{"exa mple.com", "spaces"},
		{" example.com", "spaces"},
		{"bücher.example", "punycode"},
		{"example.com:0", "1-65535"},
		{"example.com:65536", "1-65535"},
		{"example.com:", "1-65535"},
		{"example.com:+443", "1-65535"},
		{"example.com:https", "1-65535"},
		{":443", "empty host"},
		{"*", "wildcard"},
		{"*.com", "top-level domain"},
		{"*example.com", "wildcard"},
		{"foo.*.example.com", "wildcard"},
		{"*.*.example.com", "wildcard"},
		{"**.example.com", "wildcard"},
		{"*.", "empty host"},
		{"exa_mple.com", "only letters"},
		{"-a.example.com", "'-'"},
		{"a..example.com", "1-63"},
		{".example.com", "1-63"},
		{strings.Repeat("a", 64) + ".example", "1-63"},
		{strings.Repeat("a.", 127) + "example", "longer than 253"},
		{"127.1", "not a name"},
		{"2130706433", "not a name"},
		{"0x7f000001", "not a name"},
		{"0177.0.0.1:443", "not a name"},
		{"example.123", "not a name"},
		{"[10.1.2.3]:443", "IPv6"},
		{"[example.com]:443", "IPv6"},
		{"[::1]x", "HOST[:PORT]"},
		{"::1:443", ""}, // a valid IPv6 address, port 443: not an error
		{"1:2:3", "IPv6 as [ADDR]:PORT"},
		{"fe80::1%eth0", "zone"},
		{"[fe80::1%25eth0]:443", "IPv6"},
		{"0.0.0.0", "unspecified"},
		{"[::]:443", "unspecified"},
	}
	for _, c := range bad {
		r, err := ParseRule(c.in)
		if c.want == "" {
			if err != nil {
				t.Errorf("ParseRule(%q): %v", c.in, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("ParseRule(%q) = %s, want an error with %q", c.in, r, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseRule(%q): %v, want it to mention %q", c.in, err, c.want)
		}
		if !strings.HasPrefix(err.Error(), "allow host ") {
			t.Errorf("ParseRule(%q): %v, want the input named", c.in, err)
		}
	}
}

func TestAllowlistAllows(t *testing.T) {
	al, err := ParseAllowlist([]string{
		"api.example.com",
		"api.example.com:8443",
		"*.cdn.example.net",
		"10.1.2.3:443",
		"[::1]:8080",
		"[2001:db8::5]",
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		host string
		port uint16
		want bool
	}{
		{"api.example.com", 443, true},
		{"API.EXAMPLE.COM", 443, true},
		{"api.example.com.", 443, true},
		{"api.example.com", 8443, true},
		{"api.example.com", 80, false},
		{"example.com", 443, false},
		{"evil.api.example.com", 443, false}, // exact names do not cover subdomains
		{"api.example.com.evil.test", 443, false},
		{"xapi.example.com", 443, false},
		{"a.cdn.example.net", 443, true},
		{"a.b.cdn.example.net", 443, true},
		{"cdn.example.net", 443, false}, // the wildcard's apex is not included
		{"xcdn.example.net", 443, false},
		{"a.cdn.example.net", 80, false},
		{"10.1.2.3", 443, true},
		{"::ffff:10.1.2.3", 443, true},
		{"10.1.2.3", 80, false},
		{"10.1.2.4", 443, false},
		{"::1", 8080, true},
		{"0:0::1", 8080, true},
		{"::1", 443, false},
		{"2001:db8::5", 443, true},
		{"127.0.0.1", 8080, false},
		{"[::1]", 8080, false}, // brackets are for host:port, not hosts
		{"fe80::1%lo", 443, false},
		{"", 443, false},
		{"*.cdn.example.net", 443, false},
		{"127.1", 443, false},
	}
	for _, c := range cases {
		if got := al.Allows(c.host, c.port); got != c.want {
			t.Errorf("Allows(%q, %d) = %v, want %v", c.host, c.port, got, c.want)
		}
	}
	// IP rules are matched by address, never by the names of name rules
	// and vice versa.
	if !al.Allows("api.example.com", 443) || al.Allows("10.1.2.3", 8443) {
		t.Error("rules leak across kinds or ports")
	}
	if got := strings.Join(al.Strings(), " "); got != "api.example.com:443 api.example.com:8443 *.cdn.example.net:443 10.1.2.3:443 [::1]:8080 [2001:db8::5]:443" {
		t.Errorf("Strings() = %s", got)
	}
	var none Allowlist
	if none.Allows("api.example.com", 443) {
		t.Error("the empty allowlist allows something")
	}
	if _, err := ParseAllowlist([]string{"ok.example", "bad example"}); err == nil || !strings.Contains(err.Error(), `"bad example"`) {
		t.Errorf("ParseAllowlist with a bad entry: %v", err)
	}
}

func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"api.example.com", "*.example.com:8443", "[::1]:8080", "10.1.2.3", "127.1", "*.com", "a..b", ":443"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			return
		}
		if r.Port() == 0 {
			t.Fatalf("ParseRule(%q) has port 0", s)
		}
		r2, err := ParseRule(r.String())
		if err != nil || r2 != r {
			t.Fatalf("ParseRule(%q).String() = %q does not parse back (%v)", s, r.String(), err)
		}
		al := Allowlist{r}
		switch {
		case r.IsIP():
			if !al.Allows(r.addr.String(), r.port) {
				t.Fatalf("rule %s does not allow its own address", r)
			}
		case r.wildcard:
			if al.Allows(r.name, r.port) || !al.Allows("x."+r.name, r.port) {
				t.Fatalf("wildcard %s: wrong apex/subdomain match", r)
			}
		default:
			if !al.Allows(r.name, r.port) || al.Allows(r.name, r.port+1) {
				t.Fatalf("rule %s: wrong match", r)
			}
		}
	})
}

func TestNamePorts(t *testing.T) {
	a, err := ParseAllowlist([]string{"api.test:8080", "*.wild.test", "*.wild.test:80", "api.test", "api.test:8080", "10.1.2.3:22"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		want string
	}{
		{"api.test", "[8080 443]"},
		{"API.test.", "[8080 443]"},
		{"a.wild.test", "[443 80]"},
		{"a.b.wild.test", "[443 80]"},
		{"wild.test", "[]"},
		{"10.1.2.3", "[]"},
		{"other.test", "[]"},
		{"bad name", "[]"},
	} {
		if got := fmt.Sprint(a.NamePorts(c.name)); got != c.want {
			t.Errorf("NamePorts(%q) = %s, want %s", c.name, got, c.want)
		}
	}
}

func TestWithLocalhost(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"localhost:11434", "localhost:11434 127.0.0.1:11434 [::1]:11434"},
		{"localhost:8080 127.0.0.1:8080", "localhost:8080 127.0.0.1:8080 [::1]:8080"},
		{"*.example.test:80 api.test", "*.example.test:80 api.test:443"},
		{"127.0.0.1:80", "127.0.0.1:80"},
	} {
		a, err := ParseAllowlist(strings.Fields(c.in))
		if err != nil {
			t.Fatal(err)
		}
		before := strings.Join(a.Strings(), " ")
		if got := strings.Join(a.WithLocalhost().Strings(), " "); got != c.want {
			t.Errorf("WithLocalhost(%s) = %s, want %s", c.in, got, c.want)
		}
		if after := strings.Join(a.Strings(), " "); after != before {
			t.Errorf("WithLocalhost changed its receiver: %s, was %s", after, before)
		}
	}
}
