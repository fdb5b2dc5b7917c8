package bpf

import (
	"testing"

	"github.com/sbx-sandbox/sbx/policy"
)

// TestWallFlagsMatchC: package policy encodes the wall's exceptions with
// the values of the C enum both programs share (sbx_net.h).
func TestWallFlagsMatchC(t *testing.T) {
	cases := []struct {
		name     string
		pol      policy.WallFlag
		net, lsm uint32
	}{
		{"proxy", policy.WallProxy, uint32(netSbxNetFlagSBX_NET_ALLOW_PROXY), uint32(lsmSbxNetFlagSBX_NET_ALLOW_PROXY)},
		{"all", policy.WallAll, uint32(netSbxNetFlagSBX_NET_ALLOW_ALL), uint32(lsmSbxNetFlagSBX_NET_ALLOW_ALL)},
		{"loopback", policy.WallLoopback, uint32(netSbxNetFlagSBX_NET_ALLOW_LOOPBACK), uint32(lsmSbxNetFlagSBX_NET_ALLOW_LOOPBACK)},
	}
	for _, c := range cases {
		if uint32(c.pol) != c.net || uint32(c.pol) != c.lsm {
			t.Errorf("%s: policy %d, net.c %d, lsm.c %d", c.name, c.pol, c.net, c.lsm)
		}
	}
}

// TestTraceTableFromPolicy: every syscall of the seccomp deny list is in
// the tracer's table, by name, or named absent on this ABI.
func TestTraceTableFromPolicy(t *testing.T) {
	absent := map[string]bool{}
	for _, n := range SeccompAbsent {
		absent[n] = true
	}
	names := map[string]bool{}
	for _, s := range traceSyscalls {
		if s.class == classSeccomp {
			names[s.name] = true
		}
	}
	for _, n := range policy.SeccompDenied {
		if !names[n] && !absent[n] && len(traceSyscalls) > 0 {
			t.Errorf("%s: denied by seccomp, not traced nor absent", n)
		}
	}
	for _, r := range policy.SeccompArgDenied {
		if !names[r.Name] && len(traceSyscalls) > 0 {
			t.Errorf("%s: denied by argument, not traced", r.Name)
		}
	}
}
