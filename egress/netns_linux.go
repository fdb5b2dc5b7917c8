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
	var ln net.Listener
	err = doInNetns(netnsPath, func() error {
		var err error
		ln, err = listenHere(ap)
		return err
	}, func() {
		if ln != nil {
			ln.Close()
		}
	})
	if err != nil {
		return nil, fmt.Errorf("listen in netns %s: %w", netnsPath, err)
	}
	return ln, nil
}

// ListenPacketInNetns opens a UDP socket bound to addr (IP:PORT) in the
// network namespace at netnsPath, as [ListenInNetns] does for TCP. Needs
// CAP_SYS_ADMIN (setns).
func ListenPacketInNetns(netnsPath, addr string) (net.PacketConn, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || ap.Addr().Zone() != "" {
		return nil, fmt.Errorf("listen in netns %s: address %q: want IP:PORT", netnsPath, addr)
	}
	var pc net.PacketConn
	err = doInNetns(netnsPath, func() error {
		if ap.Addr().IsLoopback() {
			if err := loopbackUp(); err != nil {
				return err
			}
		}
		var err error
		pc, err = net.ListenUDP("udp", net.UDPAddrFromAddrPort(ap))
		return err
	}, func() {
		if pc != nil {
			pc.Close()
		}
	})
	if err != nil {
		return nil, fmt.Errorf("listen in netns %s: %w", netnsPath, err)
	}
	return pc, nil
}

// NetnsCookie returns the cookie of the network namespace at netnsPath
// (SO_NETNS_COOKIE of a socket created there: what bpf_get_netns_cookie
// returns for its sockets). Before Linux 5.14 the error wraps
// unix.ENOPROTOOPT. Needs CAP_SYS_ADMIN (setns).
func NetnsCookie(netnsPath string) (uint64, error) {
	var cookie uint64
	err := doInNetns(netnsPath, func() error {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return os.NewSyscallError("socket", err)
		}
		defer unix.Close(fd)
		v, err := unix.GetsockoptUint64(fd, unix.SOL_SOCKET, unix.SO_NETNS_COOKIE)
		if err != nil {
			return os.NewSyscallError("getsockopt SO_NETNS_COOKIE", err)
		}
		cookie = v
		return nil
	}, nil)
	if err != nil {
		return 0, fmt.Errorf("netns cookie of %s: %w", netnsPath, err)
	}
	return cookie, nil
}

// doInNetns runs fn on a locked OS thread that has joined the network
// namespace at netnsPath, then returns the thread to its own namespace. If
// the return fails, undo (if not nil) releases what fn made, and the thread
// is discarded, never reused by other goroutines.
func doInNetns(netnsPath string, fn func() error, undo func()) error {
	target, err := os.Open(netnsPath)
	if err != nil {
		return err
	}
	defer target.Close()
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// thread-self, not self: the namespace of this thread.
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			ch <- fmt.Errorf("open own network namespace: %w", err)
			return
		}
		defer orig.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- fmt.Errorf("join network namespace: %w", os.NewSyscallError("setns", err))
			return
		}
		ferr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			// The thread stays locked: it exits with this goroutine.
			if undo != nil {
				undo()
			}
			ch <- fmt.Errorf("return to own network namespace: %w", os.NewSyscallError("setns", err))
			return
		}
		runtime.UnlockOSThread()
		ch <- ferr
	}()
	return <-ch
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
