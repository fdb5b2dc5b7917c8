package egress

import (
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/internal/sbxtest"
)

// TestMain lets the test binary be the rootless namespace helper, as sbx's
// own binary is (sandbox.Init dispatches it there).
func TestMain(m *testing.M) {
	if len(os.Args) > 0 && os.Args[0] == HelperArg0 {
		os.Exit(RunHelper())
	}
	os.Exit(m.Run())
}

// TestNetns: both ways of opening sockets in another network namespace
// (setns as root; the helper, which joins the namespace's owning user
// namespace first, as rootless sbx does) put a listener, a UDP socket on
// the privileged port 53, an added address and a dialed connection in that
// namespace and nowhere else: a client in it reaches the listener on the
// added address, the host does not (the address is not the host's), and
// the host's own loopback listener, which the host reaches (the control),
// is not reachable from the namespace.
func TestNetns(t *testing.T) {
	if os.Geteuid() != 0 {
		sbxtest.Skip(t, sbxtest.Root, "needs root: creates namespaces")
	}
	host, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	go func() {
		for {
			c, err := host.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if c, err := net.Dial("tcp4", host.Addr().String()); err != nil {
		t.Fatalf("control: the host's listener: %v", err)
	} else {
		c.Close()
	}
	for _, tc := range []struct {
		name    string
		unshare []string
		helper  bool
	}{
		{"setns", []string{"-n"}, false},
		{"helper", []string{"-U", "-r", "-n"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pid := holdNamespaces(t, tc.unshare)
			ns, err := OpenNetns(pid, tc.helper)
			if err != nil {
				t.Fatal(err)
			}
			defer ns.Close()
			extra := netip.MustParseAddr("192.0.2.7")
			if err := ns.AddLoopbackAddr(extra); err != nil {
				t.Fatal(err)
			}
			ln, err := ns.Listen("192.0.2.7:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					io.WriteString(c, "inside")
					c.Close()
				}
			}()
			c, err := ns.Dial(ln.Addr().String())
			if err != nil {
				t.Fatalf("dial the listener in the namespace: %v", err)
			}
			got, _ := io.ReadAll(c)
			c.Close()
			if string(got) != "inside" {
				t.Errorf("read %q from the listener in the namespace", got)
			}
			if c, err := net.DialTimeout("tcp4", ln.Addr().String(), 500*time.Millisecond); err == nil {
				c.Close()
				t.Errorf("the host reached %s: the address must be the namespace's alone", ln.Addr())
			}
			if c, err := ns.Dial(host.Addr().String()); err == nil {
				c.Close()
				t.Errorf("the namespace reached the host's loopback listener %s", host.Addr())
			}
			pc, err := ns.ListenPacket("127.0.0.1:53")
			if err != nil {
				t.Fatalf("UDP 127.0.0.1:53 in the namespace: %v", err)
			}
			pc.Close()
			if err := ns.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
			if tc.helper {
				if _, err := ns.Listen("127.0.0.1:0"); err == nil {
					t.Errorf("the helper answered after Close")
				}
			}
		})
	}
}

// holdNamespaces starts "unshare ARGS sleep" and returns its pid once it
// runs sleep, that is, once unshare has made the namespaces (a check of
// the namespace alone could see one the child inherited from a thread of
// this test binary that another test left in a namespace of its own); the
// test's end kills it.
func holdNamespaces(t *testing.T, args []string) int {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skipf("sleep: %v", err)
	}
	sleep, _ = filepath.EvalSymlinks(sleep)
	cmd := exec.Command("unshare", append(args, sleep, "60")...)
	if err := cmd.Start(); err != nil {
		t.Skipf("unshare: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if exe, err := os.Readlink("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/exe"); err == nil && exe == sleep {
			return cmd.Process.Pid
		}
	}
	t.Fatal("unshare did not run sleep")
	return 0
}
