package egress

import (
	"net/netip"
	"testing"
)

func TestSpecial(t *testing.T) {
	cases := []struct{ addr, want string }{
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"169.254.169.254", "link-local"}, // cloud metadata
		{"169.254.0.1", "link-local"},
		{"10.0.0.1", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"100.64.0.1", "carrier-grade NAT"},
		{"100.127.255.255", "carrier-grade NAT"},
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "unspecified"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"255.255.255.255", "broadcast"},
		{"240.0.0.1", "reserved"},
		{"192.0.0.170", "reserved"},
		{"198.18.0.1", "reserved"},
		{"::", "unspecified"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:169.254.169.254", "link-local"},
		{"::127.0.0.1", "reserved"},
		{"64:ff9b::a9fe:a9fe", "link-local"}, // NAT64 of 169.254.169.254
		{"64:ff9b::7f00:1", "loopback"},
		{"64:ff9b:1::1", "private"},
		{"fe80::1", "link-local"},
		{"febf::1", "link-local"},
		{"fc00::1", "private"},
		{"fd00:ec2::254", "private"}, // AWS IPv6 metadata
		{"fec0::1", "private"},
		{"ff02::1", "multicast"},
		{"fe80::1%eth0", "scoped"},
		// Public: these are values only, nothing is sent to them.
		{"8.8.8.8", ""},
		{"172.32.0.1", ""},
		{"100.128.0.1", ""},
		{"169.255.0.1", ""},
		{"1.1.1.1", ""},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::808:808", ""},
		{"2606:4700::1111", ""},
		{"2001:4860:4860::8888", ""},
	}
	for _, c := range cases {
		if got := special(netip.MustParseAddr(c.addr)); got != c.want {
			t.Errorf("special(%s) = %q, want %q", c.addr, got, c.want)
		}
	}
}
