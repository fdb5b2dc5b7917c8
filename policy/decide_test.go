package policy

import (
	"errors"
	"strings"
	"testing"
)

// TestDecide: the tiers of a run over host reports, as sbx run and sbx
// doctor both take them. want is the file tiers, then "wall" and "tracer"
// when those apply, or "refuse: TEXT" (a substring of the reason).
func TestDecide(t *testing.T) {
	noLL := Absent(errors.New("landlock: not built into this kernel"))
	noLSM := Absent(errors.New("BPF LSM programs refused by this kernel"))
	root := Host{CapSysAdmin: true, CapNetAdmin: true,
		Namespaces: Present(""), UserNS: Present(""), Cgroup2: Present(""), Seccomp: Present(""),
		Landlock: Present("ABI 7"), BPFLSM: Present(""), CgroupBPF: Present(""), Tracer: Present("")}
	with := func(h Host, f func(*Host)) Host { f(&h); return h }
	user := with(root, func(h *Host) { h.EUID = 1000; h.CapSysAdmin, h.CapNetAdmin = false, false })
	container := with(root, func(h *Host) { h.CapSysAdmin = false })
	quick := Host{CapSysAdmin: true, CapNetAdmin: true, Landlock: Present(""), BPFLSM: noLSM} // what a run probes
	cases := []struct {
		name   string
		host   Host
		demand FileDemand
		want   string
	}{
		{"root all", root, DemandAuto, "bpf lsm,landlock wall tracer"},
		{"root all, landlock demanded", root, DemandLandlock, "landlock wall tracer"},
		{"root all, bpf demanded", root, DemandBPF, "bpf lsm wall tracer"},
		{"root no lsm", with(root, func(h *Host) { h.BPFLSM = noLSM }), DemandAuto, "landlock wall tracer"},
		{"root no lsm, bpf demanded", with(root, func(h *Host) { h.BPFLSM = noLSM }), DemandBPF, "refuse: --policy bpf: BPF LSM programs refused"},
		{"root no landlock", with(root, func(h *Host) { h.Landlock = noLL }), DemandAuto, "bpf lsm wall tracer"},
		{"root no landlock, landlock demanded", with(root, func(h *Host) { h.Landlock = noLL }), DemandLandlock, "refuse: --policy landlock: landlock: not built"},
		{"root no file tier", with(root, func(h *Host) { h.Landlock, h.BPFLSM = noLL, noLSM }), DemandAuto, "refuse: no file tier available"},
		{"root no cgroup bpf", with(root, func(h *Host) { h.CgroupBPF = Absent(errors.New("program type CGroupSock: not supported")) }), DemandAuto, "refuse: network wall (cgroup BPF): program type"},
		{"root no tracer goes on", with(root, func(h *Host) { h.Tracer = Absent(errors.New("no BTF")) }), DemandAuto, "bpf lsm,landlock wall"},
		{"root no cgroup2", with(root, func(h *Host) { h.Cgroup2 = Absent(errors.New("none")) }), DemandAuto, "refuse: cgroups: none"},
		{"root no seccomp", with(root, func(h *Host) { h.Seccomp = Absent(errors.New("no errno")) }), DemandAuto, "refuse: seccomp: no errno"},
		{"root without CAP_NET_ADMIN", with(root, func(h *Host) { h.CapNetAdmin = false }), DemandAuto, "refuse: root without CAP_NET_ADMIN"},
		{"root quick probe", quick, DemandAuto, "landlock wall tracer"},
		{"user", user, DemandAuto, "landlock"},
		{"user, bpf demanded", user, DemandBPF, "refuse: --policy bpf: BPF LSM needs root"},
		{"user, landlock demanded", user, DemandLandlock, "landlock"},
		{"user no landlock", with(user, func(h *Host) { h.Landlock = noLL }), DemandAuto, "refuse: no file tier available, refusing to run unconfined: landlock: not built into this kernel; BPF LSM needs root"},
		{"user no userns", with(user, func(h *Host) { h.UserNS = Absent(errors.New("disabled")) }), DemandAuto, "refuse: user namespaces: disabled"},
		{"user no cgroup bpf is fine", with(user, func(h *Host) { h.CgroupBPF = Absent(ErrCgroupBPFNeedsRoot) }), DemandAuto, "landlock"},
		{"root without CAP_SYS_ADMIN is rootless", container, DemandAuto, "landlock"},
		{"root without CAP_SYS_ADMIN, bpf demanded", container, DemandBPF, "refuse: --policy bpf: BPF LSM needs root"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Decide(c.host, Demand{Files: c.demand})
			var got string
			if d.Refused != nil {
				got = "refuse: " + d.Refused.Error()
				if !strings.HasPrefix(got, c.want) {
					t.Errorf("got %q, want %q...", got, c.want)
				}
				return
			}
			got = strings.Join(d.FileTiers(), ",")
			if d.CgroupWall {
				got += " wall"
			}
			if d.Tracer {
				got += " tracer"
			}
			if got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
			if d.Rootless != c.host.Rootless() {
				t.Errorf("rootless %v, host says %v", d.Rootless, c.host.Rootless())
			}
		})
	}
}

func TestNetTiers(t *testing.T) {
	root := Decision{Landlock: true, CgroupWall: true}
	if got := strings.Join(root.NetTiers(), ", "); got != "empty network namespace, seccomp socket filter, cgroup bpf" {
		t.Errorf("root: %s", got)
	}
	user := Decision{Rootless: true, Landlock: true}
	if got := strings.Join(user.NetTiers(), ", "); got != "empty network namespace, seccomp socket filter, landlock tcp bind/connect" {
		t.Errorf("rootless: %s", got)
	}
}

func TestParseFileDemand(t *testing.T) {
	for in, want := range map[string]FileDemand{"": DemandAuto, "auto": DemandAuto, "landlock": DemandLandlock, "bpf": DemandBPF} {
		if got, err := ParseFileDemand(in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	if _, err := ParseFileDemand("selinux"); err == nil {
		t.Error("selinux accepted")
	}
}
