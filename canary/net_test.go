package canary

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestNetFailsOutsideWall: outside any network wall, where inet sockets
// can be created (the control, checked first), the proof fails and says
// the wall is not enforced; the wall's own pass is bpf's TestNetCanary.
func TestNetFailsOutsideWall(t *testing.T) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Skipf("this process cannot create inet sockets at all: %v", err)
	}
	unix.Close(fd)
	err = Net()
	if err == nil || !strings.Contains(err.Error(), "the network wall is not enforced") {
		t.Errorf("Net() outside a wall: %v, want the wall reported as not enforced", err)
	}
}
