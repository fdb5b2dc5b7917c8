package main

import (
	"strings"
	"testing"
)

// TestRootWithoutSysAdmin: root without CAP_SYS_ADMIN (as in a container or
// a restricted CI runner) runs the rootless path, says so, and is walled
// (a write outside the workspace gets EROFS, an inet socket EPERM), and
// doctor agrees; the control is the same run with every capability.
func TestRootWithoutSysAdmin(t *testing.T) {
	if rootless() {
		t.Skip("root's capabilities")
	}
	b := newBox(t)
	drop := []string{"--bounding-set", "-sys_admin", "--inh-caps", "-sys_admin", "--", sbxBin}
	script := `touch /etc/sbx-nocaps 2>/dev/null; echo touch=$?; python3 -c 'import socket
try:
    socket.socket()
    print("socket=ok")
except OSError as e:
    print("socket=%d" % e.errno)'`
	r := b.host(opts{}, "setpriv", append(drop, "run", "--net", "none", "--", "sh", "-c", script)...)
	if r.code != 0 || r.stdout != "touch=1\nsocket=1\n" {
		t.Errorf("walled rootless run: want touch=1 socket=1\n%v", r)
	}
	// Under the default --net loopback its own loopback works.
	if r := b.host(opts{}, "setpriv", append(drop, "run", "--", "sh", "-c", script)...); r.code != 0 || r.stdout != "touch=1\nsocket=ok\n" {
		t.Errorf("loopback rootless run: want touch=1 socket=ok\n%v", r)
	}
	if !strings.Contains(r.stderr, "root without CAP_SYS_ADMIN") {
		t.Errorf("no word about the mode\n%v", r)
	}
	d := b.host(opts{}, "setpriv", append(drop, "doctor")...)
	if !strings.Contains(d.stdout+d.stderr, "rootless") {
		t.Errorf("doctor does not say rootless\n%v", d)
	}
	r = b.run("--", "true")
	if r.code != 0 || strings.Contains(r.stderr, "CAP_SYS_ADMIN") {
		t.Errorf("control\n%v", r)
	}
}

// TestDoctorAgreesWithRun: on this host, whatever capabilities root holds
// and whichever file tier is demanded (--policy), doctor's verdict (exit
// 0: "can enforce") is the outcome of a real run: run exits 0 exactly
// when doctor does, and where doctor refuses, run refuses with the same
// reason (exit 125) before building anything. With every capability and
// --policy auto, both succeed (the control); as a user, doctor and a
// rootless run agree too.
func TestDoctorAgreesWithRun(t *testing.T) {
	b := newBox(t)
	type tc struct{ drop, policy string }
	var cases []tc
	for _, drop := range []string{"", "-sys_admin", "-net_admin", "-bpf", "-sys_admin,-net_admin"} {
		cases = append(cases, tc{drop, "auto"})
	}
	for _, p := range []string{"landlock", "bpf"} {
		cases = append(cases, tc{"", p}, tc{"-bpf", p})
	}
	if rootless() { // a user holds nothing to drop
		cases = []tc{{"", "auto"}, {"", "landlock"}, {"", "bpf"}}
	}
	for _, c := range cases {
		t.Run("drop"+c.drop+"/"+c.policy, func(t *testing.T) {
			pre := []string{"--", sbxBin}
			if c.drop != "" {
				pre = []string{"--bounding-set", c.drop, "--inh-caps", c.drop, "--", sbxBin}
			}
			d := b.host(opts{}, "setpriv", append(pre, "doctor", "--policy", c.policy)...)
			r := b.host(opts{}, "setpriv", append(pre, "run", "--policy", c.policy, "--", "true")...)
			if (d.code == 0) != (r.code == 0) {
				t.Fatalf("doctor exit %d, run exit %d: they disagree\ndoctor: %v\nrun: %v", d.code, r.code, d, r)
			}
			if c.drop == "" && c.policy == "auto" && d.code != 0 {
				t.Fatalf("control: doctor and run fail with every capability\n%v\n%v", d, r)
			}
			if i := strings.Index(d.stdout, "refused:       "); i >= 0 {
				reason := strings.TrimSpace(strings.SplitN(d.stdout[i+len("refused:       "):], "\n", 2)[0])
				if r.code != exitSbxError || !strings.Contains(r.stderr, reason) {
					t.Errorf("doctor refuses with %q; run: want exit %d with that reason\n%v", reason, exitSbxError, r)
				}
			}
		})
	}
}
