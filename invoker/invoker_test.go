package invoker

import (
	"os"
	"testing"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// TestCurrent: without sudo the process's user with $HOME; as root under
// sudo, SUDO_UID's user with the passwd home; a uid without a passwd
// entry gets SUDO_GID and a home under /tmp.
func TestCurrent(t *testing.T) {
	u := Current(envOf(map[string]string{"HOME": "/some/where/"}))
	if u.UID != os.Getuid() || u.Home != "/some/where" {
		t.Errorf("no sudo: %+v, want uid %d, home /some/where", u, os.Getuid())
	}
	if os.Getuid() != 0 {
		t.Skip("the sudo cases need root")
	}
	u = Current(envOf(map[string]string{"SUDO_UID": "65534", "SUDO_GID": "65534", "HOME": "/root"}))
	if u.UID != 65534 || u.Home == "/root" {
		t.Errorf("sudo as 65534: %+v, want uid 65534 and not root's HOME", u)
	}
	u = Current(envOf(map[string]string{"SUDO_UID": "4242421", "SUDO_GID": "4242422"}))
	if u.UID != 4242421 || u.GID != 4242422 || u.Home != "/tmp" || u.Name != "4242421" {
		t.Errorf("sudo as a uid without passwd entry: %+v", u)
	}
}

// TestWorkspaceOwnerNeedsAHeldWorkspace: no workspace, or sudo, is no
// owner to run as.
func TestWorkspaceOwnerNeedsAHeldWorkspace(t *testing.T) {
	if _, ok := WorkspaceOwner(nil, false); ok {
		t.Error("an owner without a workspace")
	}
	if _, ok := WorkspaceOwner(nil, true); ok {
		t.Error("an owner under sudo")
	}
}
