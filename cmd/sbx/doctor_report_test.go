package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sbx-sandbox/sbx/bpf"
	"github.com/sbx-sandbox/sbx/policy"
)

// TestDoctorReportKernels: doctor's checks and decision on the kernels
// users run, one golden file each (testdata/doctor; rerun with -update
// after a deliberate change). The hosts are what hostcheck.Probe reports
// there: Debian 11's 5.10 (no Landlock; the BPF LSM set does not load),
// RHEL 9's 5.14 (Landlock, BPF LSM set too new for it), Debian 12's 6.1
// with everything, and this CI host's kind (BPF LSM refused at load).
func TestDoctorReportKernels(t *testing.T) {
	full := func(k string) policy.Host {
		return policy.Host{Kernel: k, CapSysAdmin: true, CapNetAdmin: true,
			Namespaces: policy.Present("mount, pid, net, ipc, uts, cgroup, user"), UserNS: policy.Present("unprivileged user namespaces allowed"),
			Cgroup2: policy.Present("cgroup2 at /sys/fs/cgroup"), Delegation: policy.Present("/sys/fs/cgroup/user.slice"),
			Seccomp: policy.Present("filter mode"), Landlock: policy.Present("ABI 3"), LandlockABI: 3,
			BPFLSM: policy.Present("hooks"), CgroupBPF: policy.Present("sock_create"), Tracer: policy.Present("tp_btf"),
			Securityfs: policy.Present("/sys/kernel/security"), BPFFS: policy.Present("/sys/fs/bpf")}
	}
	below := func(f bpf.Floor, what string, k bpf.KernelVersion, err string) error {
		return fmt.Errorf("%w (%s)", f.Below(what, k), err)
	}
	k510, k514 := bpf.KernelVersion{Major: 5, Minor: 10}, bpf.KernelVersion{Major: 5, Minor: 14}
	debian11 := full("5.10")
	// Debian 11's errors are the ones its 5.10 cloud kernel gives
	// (make e2e-vm's bullseye boot): the verifier rejects the bpf_loop
	// callbacks of the LSM programs and of the tracer alike.
	verifier := "number of funcs in func_info doesn't match number of subprogs"
	tracerErr := "refusals by Landlock, seccomp and read-only mounts are not reported: load program: assign values: field SbxSysExit: program sbx_sys_exit: load program: invalid argument: " + verifier
	debian11.Landlock = policy.Absent(below(bpf.MinLandlock, "Landlock file tier", k510, "landlock: not built into this kernel (CONFIG_SECURITY_LANDLOCK)"))
	debian11.BPFLSM = policy.Absent(below(bpf.MinLSM, "BPF LSM tier", k510, "load: load bpf lsm programs: program sbx_sb_pivotroot: load program: invalid argument: "+verifier))
	debian11.Tracer = policy.Absent(below(bpf.MinTracer, "denial tracer", k510, tracerErr))
	rhel9 := full("5.14")
	rhel9.BPFLSM = policy.Absent(below(bpf.MinLSM, "BPF LSM tier", k514, "load bpf lsm programs: "+verifier))
	rhel9.Tracer = policy.Absent(below(bpf.MinTracer, "denial tracer", k514, tracerErr))
	debian11User := debian11
	debian11User.EUID, debian11User.CapSysAdmin, debian11User.CapNetAdmin = 1000, false, false
	debian11User.BPFLSM = policy.Absent(policy.ErrBPFLSMNeedsRoot)
	debian11User.CgroupBPF, debian11User.Tracer = policy.Absent(policy.ErrCgroupBPFNeedsRoot), policy.Absent(policy.ErrCgroupBPFNeedsRoot)
	ci := full("6.18")
	ci.BPFLSM = policy.Absent(errors.New("BPF LSM programs refused by this kernel (EPERM at load): load program: operation not permitted"))
	cases := map[string]policy.Host{
		"debian11-root":     debian11,
		"debian11-rootless": debian11User,
		"rhel9-root":        rhel9,
		"debian12-root":     full("6.1"),
		"ci-root":           ci,
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			writeReport(&buf, h, policy.DemandAuto)
			path := filepath.Join("testdata", "doctor", name+".txt")
			if *updateGolden {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("doctor report for %s differs from %s (rerun with -update if intended):\n%s", name, path, buf.String())
			}
		})
	}
}
