package runner

import (
	"testing"

	"github.com/sbx-sandbox/sbx/bpf/netwall"
	"github.com/sbx-sandbox/sbx/sandbox"
)

// TestWallGroupName: the network wall's build id is a wall group the
// sandbox package accepts (and its sweep tells apart from a run's cgroup),
// so a root run's spec validates.
func TestWallGroupName(t *testing.T) {
	if id := netwall.WallID(); !sandbox.ValidWallGroup(id) {
		t.Errorf("netwall.WallID() = %q is not a valid sandbox wall group (prefix %q)", id, sandbox.WallGroupPrefix)
	}
}
