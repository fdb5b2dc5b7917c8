package netsvc

import (
	"fmt"
	"testing"
)

func TestParsePublish(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"8080", "127.0.0.1:8080->8080"},
		{"8080:80", "127.0.0.1:8080->80"},
		{"0.0.0.0:8080:80", "0.0.0.0:8080->80"},
		{"127.0.0.2:1455:1455", "127.0.0.2:1455->1455"},
		{"[::1]:8080:80", "[::1]:8080->80"},
		{"[::1]:8080", "[::1]:8080->8080"},
		{"0", "error"},
		{"", "error"},
		{"80:70000", "error"},
		{"a:80", "error"},
		{"1.2.3:80:80", "error"},
		{"::1:80:80", "error"},
		{"[::1]8080", "error"},
		{"[127.0.0.1]:80", "error"},
		{"1:2:3:4", "error"},
	} {
		p, err := ParsePublish(c.in)
		got := fmt.Sprintf("%s->%d", p.Host, p.Sandbox)
		if err != nil {
			got = "error"
		}
		if got != c.want {
			t.Errorf("ParsePublish(%q) = %s (%v), want %s", c.in, got, err, c.want)
		}
	}
}
