package lsm

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/bpf"
	"github.com/sbx-sandbox/sbx/policy"
)

// TestLoadFailuresFallBack: each way the BPF LSM set was seen failing to
// load (Debian 11's 5.10 kernel: the memlock limit, then the verifier)
// leaves a root run on Landlock alone, with the reason named; with
// Landlock missing too, the run is refused. Unprivileged: the errors are
// the kernel's as cilium/ebpf wraps them, the decision is policy.Decide's.
func TestLoadFailuresFallBack(t *testing.T) {
	old := bpf.KernelVersion{Major: 5, Minor: 10}
	cases := []struct {
		name string
		err  error
		k    bpf.KernelVersion
		want string // in the reason
	}{
		{"memlock EPERM", fmt.Errorf("map sbx_lsm_allow: map create: %w", unix.EPERM), bpf.KernelVersion{Major: 6, Minor: 1}, "refused by this kernel (EPERM at load)"},
		{"verifier EINVAL (bpf_loop callbacks)", fmt.Errorf("program sbx_file_open: load program: %w", &ebpf.VerifierError{Cause: unix.EINVAL, Log: []string{"number of funcs in func_info doesn't match number of subprogs"}}), old, "needs Linux 5.17+ (bpf_loop); this is 5.10"},
		{"unknown helper", fmt.Errorf("program sbx_socket_create: load program: %w", &ebpf.VerifierError{Cause: unix.EINVAL, Log: []string{"unknown func bpf_get_current_ancestor_cgroup_id#178"}}), old, "unknown func bpf_get_current_ancestor_cgroup_id"},
		{"no BPF LSM", fmt.Errorf("program sbx_file_open: %w", ebpf.ErrNotSupported), bpf.KernelVersion{Major: 6, Minor: 1}, "not supported by this kernel"},
	}
	if os.Geteuid() != 0 {
		// loadError reads an EPERM of an unprivileged process as the
		// missing capabilities, not as the kernel's refusal.
		cases[0].want = "needs root: CAP_BPF, CAP_SYS_ADMIN and CAP_MAC_ADMIN"
	}
	root := policy.Host{CapSysAdmin: true, CapNetAdmin: true, Landlock: policy.Present("ABI 3")}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reason := belowFloorOn(loadError(c.err), c.k)
			if !strings.Contains(reason.Error(), c.want) {
				t.Errorf("reason %q lacks %q", reason, c.want)
			}
			h := root
			h.BPFLSM = policy.Absent(reason)
			d := policy.Decide(h, policy.Demand{Files: policy.DemandAuto})
			if d.Refused != nil || d.BPFLSM || !d.Landlock {
				t.Errorf("auto: got %+v, want Landlock alone", d)
			}
			d = policy.Decide(h, policy.Demand{Files: policy.DemandBPF})
			if d.Refused == nil || !strings.Contains(d.Refused.Error(), c.want) {
				t.Errorf("--policy bpf: refused %v, want the reason %q", d.Refused, c.want)
			}
			h.Landlock = policy.Absent(errors.New("landlock: not built into this kernel"))
			d = policy.Decide(h, policy.Demand{Files: policy.DemandAuto})
			if d.Refused == nil || !strings.Contains(d.Refused.Error(), "no file tier available") || !strings.Contains(d.Refused.Error(), c.want) {
				t.Errorf("neither tier: refused %v, want both reasons", d.Refused)
			}
		})
	}
}
