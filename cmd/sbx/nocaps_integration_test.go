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
