package netwall

import (
	"testing"

	"github.com/sbx-sandbox/sbx/policy"
)

// TestWallFlagsMatchC: package policy encodes the wall's exceptions with
// the values of the C enum both programs share (sbx_net.h); lsm checks its
// own copy.
func TestWallFlagsMatchC(t *testing.T) {
	cases := []struct {
		name string
		pol  policy.WallFlag
		c    uint32
	}{
		{"proxy", policy.WallProxy, uint32(netSbxNetFlagSBX_NET_ALLOW_PROXY)},
		{"all", policy.WallAll, uint32(netSbxNetFlagSBX_NET_ALLOW_ALL)},
		{"loopback", policy.WallLoopback, uint32(netSbxNetFlagSBX_NET_ALLOW_LOOPBACK)},
	}
	for _, c := range cases {
		if uint32(c.pol) != c.c {
			t.Errorf("%s: policy %d, net.c %d", c.name, c.pol, c.c)
		}
	}
}

// TestWallForwardsMatchC: the entry holds as many forwarder endpoints as
// package policy compiles (SBX_NET_MAX_FWD, policy.MaxWallForwards).
func TestWallForwardsMatchC(t *testing.T) {
	if n := len(netSbxNetPolicy{}.Fwd); n != policy.MaxWallForwards {
		t.Errorf("net.c holds %d forwarder endpoints, policy compiles up to %d", n, policy.MaxWallForwards)
	}
}
