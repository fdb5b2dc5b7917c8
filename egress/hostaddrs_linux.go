package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// HostAddrs are the addresses of the host's own interfaces, which the
// DNS-rebinding guard refuses to names: an allowed name resolving to the
// host's eth0 or docker0 address would reach every service the host runs
// on 0.0.0.0. They are read when the watch starts and read again before
// the next check whenever the kernel announced a change (a netlink socket
// subscribed to address changes, drained without blocking at each check),
// so an address added during the run counts from the next connection on.
// The watch belongs to the network namespace of the thread that opened
// it: open it in sbx's own (the one the proxy dials from).
type HostAddrs struct {
	mu    sync.Mutex
	fd    int // netlink socket of the address groups; -1: read every time
	addrs map[netip.Addr]bool
	stale bool // a change was announced (or the last read failed)
}

// WatchHostAddrs reads the host's addresses and starts watching them for
// changes. Without the netlink subscription (a kernel or seccomp policy
// refusing it) it still works, reading the addresses at every check.
func WatchHostAddrs() (*HostAddrs, error) {
	h := &HostAddrs{fd: -1, stale: true}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.NETLINK_ROUTE)
	if err == nil {
		sa := &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: unix.RTMGRP_IPV4_IFADDR | unix.RTMGRP_IPV6_IFADDR}
		if err := unix.Bind(fd, sa); err != nil {
			unix.Close(fd)
		} else {
			h.fd = fd
		}
	}
	// Subscribed first, read second: a change in between is seen again.
	if _, err := h.Own(netip.IPv6Loopback()); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// Own reports whether a (unmapped, no zone) is an address of one of the
// host's interfaces. It fails, and the caller must refuse, when the
// addresses cannot be read.
func (h *HostAddrs) Own(a netip.Addr) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fd < 0 || h.changed() {
		h.stale = true
	}
	if h.stale {
		addrs, err := readHostAddrs()
		if err != nil {
			return false, fmt.Errorf("read the host's addresses: %w", err)
		}
		h.addrs, h.stale = addrs, false
	}
	return h.addrs[a.Unmap().WithZone("")], nil
}

// changed drains the subscription and reports whether anything came (an
// overflow of the socket's buffer counts: changes were lost).
func (h *HostAddrs) changed() bool {
	buf := make([]byte, 8192)
	changed := false
	for {
		n, _, err := unix.Recvfrom(h.fd, buf, unix.MSG_DONTWAIT)
		switch {
		case err == nil && n > 0:
			changed = true
		case errors.Is(err, unix.EINTR):
		case errors.Is(err, unix.ENOBUFS):
			changed = true
		case err == nil, errors.Is(err, unix.EAGAIN):
			return changed
		default:
			// The socket is broken: read the addresses every time.
			unix.Close(h.fd)
			h.fd = -1
			return true
		}
	}
}

// Close ends the watch.
func (h *HostAddrs) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fd < 0 {
		return nil
	}
	err := unix.Close(h.fd)
	h.fd = -1
	return os.NewSyscallError("close", err)
}

// readHostAddrs lists the addresses of every interface of the namespace.
func readHostAddrs() (map[netip.Addr]bool, error) {
	list, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	out := make(map[netip.Addr]bool, len(list))
	for _, ad := range list {
		var ip net.IP
		switch v := ad.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		if a, ok := netip.AddrFromSlice(ip); ok {
			out[a.Unmap()] = true
		}
	}
	return out, nil
}
