// Package bpftest holds the test fixtures the BPF packages share: the root
// check, temporary cgroups and temporary pin roots, each removed at
// cleanup. Only tests import it.
package bpftest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/bpf/pin"
	"github.com/sbx-sandbox/sbx/internal/cgroup2"
	"github.com/sbx-sandbox/sbx/internal/sbxtest"
)

// RequireRoot skips when the test cannot have the privileges cgroup BPF
// needs.
func RequireRoot(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("loads BPF programs as root; skipped with -short")
	}
	sbxtest.RequireRoot(t, "needs root (cgroup BPF, bpffs, cgroup2 writes)")
}

// RandName is a random name for a test's cgroups and pin roots.
func RandName(t testing.TB) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

// CgroupDir creates a cgroup2 directory that is removed at cleanup.
func CgroupDir(t testing.TB, path string) string {
	t.Helper()
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatalf("create cgroup: %v", err)
	}
	t.Cleanup(func() {
		if err := os.Remove(path); err != nil {
			t.Errorf("remove cgroup %s: %v", path, err)
		}
	})
	return path
}

// Parent creates a temporary parent cgroup under the cgroup2 mount. It
// skips only when the host has no cgroup2.
func Parent(t testing.TB) string {
	t.Helper()
	RequireRoot(t)
	mnt, err := cgroup2.Mount()
	if errors.Is(err, cgroup2.ErrNoMount) {
		t.Skipf("no cgroup2 on this host: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return CgroupDir(t, filepath.Join(mnt, "sbx-test-"+RandName(t)))
}

// PinRoot returns a test-only pin root on bpffs, removed at cleanup.
func PinRoot(t testing.TB) string {
	t.Helper()
	if err := pin.Mount(); err != nil {
		t.Fatalf("mount bpffs: %v", err)
	}
	root := filepath.Join(pin.BPFFS, "sbx-test-"+RandName(t))
	t.Cleanup(func() {
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			if err := pin.RemoveDir(filepath.Join(root, e.Name())); err != nil {
				t.Errorf("remove pins: %v", err)
			}
		}
		if err := os.Remove(root); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("remove pin root: %v", err)
		}
	})
	return root
}

// ErrName names err for a helper process's one-line answer: "ok" for nil,
// the errno's name (EACCES, EPERM, ...) for an errno, else its text.
func ErrName(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	return err.Error()
}

// HelperArgs returns the arguments after "--" in os.Args: what a test
// binary re-run as a helper process was asked to do.
func HelperArgs() []string {
	for i, a := range os.Args {
		if a == "--" {
			return os.Args[i+1:]
		}
	}
	return os.Args
}

// HostAddrs returns the global unicast addresses of the test's network
// namespace, one IPv4 and one IPv6 at most, and skips the test when there
// are none: endpoints beyond loopback for the forwarder exception (sbx puts
// such an address on a sandbox's lo; vmtest puts two on the guest's).
func HostAddrs(t testing.TB) []netip.Addr {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var out []netip.Addr
	var have4, have6 bool
	for _, a := range addrs {
		p, err := netip.ParsePrefix(a.String())
		if err != nil || !p.Addr().IsGlobalUnicast() {
			continue
		}
		switch ad := p.Addr(); {
		case ad.Is4() && !have4:
			have4 = true
			out = append(out, ad)
		case ad.Is6() && !have6:
			have6 = true
			out = append(out, ad)
		}
	}
	if len(out) == 0 {
		t.Skip("the host has no global unicast address to listen on")
	}
	return out
}
