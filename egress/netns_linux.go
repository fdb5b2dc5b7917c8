package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// ListenInNetns opens a TCP listener on addr (IP:PORT, port 0 for any) in
// the network namespace at netnsPath (/proc/PID/ns/net of a sandbox's
// PID 1) and returns it to the calling namespace: clients in that namespace
// connect to it, while the process accepting and dialing out stays in its
// own. For a loopback address, the namespace's lo is brought up if it is
// down (libcontainer's loopback network has done it already for a sandbox).
//
// It works on a locked OS thread that joins the namespace and returns to
// the original one; if the return fails the thread is discarded, never
// reused by other goroutines. Needs CAP_SYS_ADMIN (setns).
func ListenInNetns(netnsPath, addr string) (net.Listener, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || ap.Addr().Zone() != "" {
		return nil, fmt.Errorf("listen in netns %s: address %q: want IP:PORT", netnsPath, addr)
	}
	target, err := os.Open(netnsPath)
	if err != nil {
		return nil, fmt.Errorf("listen in netns: %w", err)
	}
	defer target.Close()

	type result struct {
		ln  net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		// thread-self, not self: the namespace of this thread.
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("open own network namespace: %w", err)}
			return
		}
		defer orig.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("join network namespace: %w", os.NewSyscallError("setns", err))}
			return
		}
		ln, lerr := listenHere(ap)
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			// The thread stays locked: it exits with this goroutine.
			if ln != nil {
				ln.Close()
			}
			ch <- result{err: fmt.Errorf("return to own network namespace: %w", os.NewSyscallError("setns", err))}
			return
		}
		runtime.UnlockOSThread()
		ch <- result{ln: ln, err: lerr}
	}()
	r := <-ch
	if r.err != nil {
		return nil, fmt.Errorf("listen in netns %s: %w", netnsPath, r.err)
	}
	return r.ln, nil
}

// listenHere listens on ap in the calling thread's network namespace.
func listenHere(ap netip.AddrPort) (net.Listener, error) {
	if ap.Addr().IsLoopback() {
		if err := loopbackUp(); err != nil {
			return nil, err
		}
	}
	ln, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(ap))
	if err != nil {
		return nil, err
	}
	return ln, nil
}

// loopbackUp sets IFF_UP on lo if it is not set.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("bring lo up: %w", os.NewSyscallError("socket", err))
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("bring lo up: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring lo up: %w", os.NewSyscallError("SIOCGIFFLAGS", err))
	}
	flags := ifr.Uint16()
	if flags&unix.IFF_UP != 0 {
		return nil
	}
	ifr.SetUint16(flags | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		if errors.Is(err, unix.EPERM) {
			return fmt.Errorf("bring lo up: %w (needs CAP_NET_ADMIN in that namespace)", err)
		}
		return fmt.Errorf("bring lo up: %w", os.NewSyscallError("SIOCSIFFLAGS", err))
	}
	return nil
}
