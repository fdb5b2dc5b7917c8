package canary

import (
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Comm is the comm of the thread that runs [Net], so the runner
// can tell the canary's own denials from the sandboxed program's. (A
// sandboxed program could name itself so too; that only hides its lines
// from the report, never lifts a denial. A runner that drops exactly the
// events Canary caused, and no more, is not fooled either.)
const Comm = "sbx-canary"

// Events is how many wall events one successful [Net], or [Loopback]
// with the wall, produces.
const Events = 2

// Outside4 and Outside6 are the addresses the loopback canary must not
// reach: in TEST-NET-1 (RFC 5737) and the IPv6 documentation prefix (RFC
// 3849), never routed anywhere. A UDP connect sends nothing; it only asks
// the walls and the routing table. The runner never puts them on a
// sandbox's lo, which would defeat the proof.
var (
	Outside4 = netip.AddrFrom4([4]byte{192, 0, 2, 1})
	Outside6 = netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 1})
)

// Net proves the network wall holds for the calling process: it must be
// in a run cgroup under the wall's parent, where socket(AF_INET, SOCK_DGRAM)
// and socket(AF_INET6, SOCK_STREAM) must fail with EPERM. It needs no
// privileges (capability checks cannot mask the wall: these sockets need
// none). Call it in the sandbox right before exec; an error means the run
// must not start (fail closed).
func Net() error {
	return asCanary(noSockets)
}

// asCanary runs fn on the calling goroutine's thread, locked and named
// [Comm].
func asCanary(fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old [16]byte
	if err := unix.Prctl(unix.PR_GET_NAME, uintptrOf(&old[0]), 0, 0, 0); err != nil {
		return fmt.Errorf("net canary: get thread name: %w", err)
	}
	name := append([]byte(Comm), 0)
	if err := unix.Prctl(unix.PR_SET_NAME, uintptrOf(&name[0]), 0, 0, 0); err != nil {
		return fmt.Errorf("net canary: set thread name: %w", err)
	}
	defer unix.Prctl(unix.PR_SET_NAME, uintptrOf(&old[0]), 0, 0, 0)
	return fn()
}

// noSockets is Net's proof: no inet socket at all.
func noSockets() error {
	for _, s := range []struct {
		family, typ int
		what        string
	}{
		{unix.AF_INET, unix.SOCK_DGRAM, "socket(AF_INET, SOCK_DGRAM)"},
		{unix.AF_INET6, unix.SOCK_STREAM, "socket(AF_INET6, SOCK_STREAM)"},
	} {
		fd, err := unix.Socket(s.family, s.typ|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
			return fmt.Errorf("net canary: %s succeeded: the network wall is not enforced for this process", s.what)
		}
		if !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("net canary: %s failed with %w, want EPERM from the network wall", s.what, err)
		}
	}
	return nil
}

// Loopback proves the network of a run that may use its own loopback
// (sbx run --net loopback): an AF_INET UDP socket can be created and
// connected to 127.0.0.1, while connects of AF_INET and AF_INET6 sockets
// to addresses outside (TEST-NET-1 192.0.2.1, 2001:db8::1) fail. With wall
// (the cgroup BPF network wall is in place) they must fail with EPERM, the
// wall's refusal, before any route is looked up; without (rootless: the
// empty namespace is the wall), with ENETUNREACH, which proves the
// namespace has no route out. A UDP connect sends nothing. An IPv6-less
// kernel (socket(AF_INET6) fails with EAFNOSUPPORT) skips the IPv6 part.
// Call it in the sandbox right before exec; an error means the run must
// not start (fail closed).
func Loopback(wall bool) error {
	want := unix.ENETUNREACH
	if wall {
		want = unix.EPERM
	}
	return asCanary(func() error { return loopbackProof(want) })
}

func loopbackProof(want unix.Errno) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("net canary: socket(AF_INET, SOCK_DGRAM) failed with %w: loopback is not usable", err)
	}
	defer unix.Close(fd)
	if err := unix.Connect(fd, &unix.SockaddrInet4{Port: 9, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return fmt.Errorf("net canary: UDP connect to 127.0.0.1:9 failed with %w: loopback is not usable", err)
	}
	err = unix.Connect(fd, &unix.SockaddrInet4{Port: 9, Addr: Outside4.As4()})
	if err := outsideRefused(netip.AddrPortFrom(Outside4, 9).String(), err, want); err != nil {
		return err
	}
	fd6, err := unix.Socket(unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if errors.Is(err, unix.EAFNOSUPPORT) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("net canary: socket(AF_INET6, SOCK_DGRAM) failed with %w", err)
	}
	defer unix.Close(fd6)
	err = unix.Connect(fd6, &unix.SockaddrInet6{Port: 9, Addr: Outside6.As16()})
	return outsideRefused(netip.AddrPortFrom(Outside6, 9).String(), err, want)
}

// outsideRefused checks the result of a UDP connect to an outside address.
func outsideRefused(what string, err error, want unix.Errno) error {
	if err == nil {
		return fmt.Errorf("net canary: UDP connect to %s succeeded: the sandbox can reach beyond its loopback", what)
	}
	if !errors.Is(err, want) && want == unix.EPERM {
		return fmt.Errorf("net canary: UDP connect to %s failed with %w, want EPERM: the network wall is not enforced for this process", what, err)
	}
	if !errors.Is(err, want) {
		return fmt.Errorf("net canary: UDP connect to %s failed with %w, want %s: the sandbox's namespace has a route out", what, err, unix.ErrnoName(want))
	}
	return nil
}

func uintptrOf(p *byte) uintptr { return uintptr(unsafe.Pointer(p)) }
