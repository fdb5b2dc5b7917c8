package egress

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// HostAddrs are the host's own addresses, which the DNS-rebinding guard
// refuses to names: an allowed name resolving to the host's eth0 or
// docker0 address would reach every service the host runs on 0.0.0.0.
// The interfaces' addresses are read when the watch starts and read again
// before the next check whenever the kernel announced a change (a netlink
// socket subscribed to address changes, drained without blocking at each
// check), so an address added during the run counts from the next
// connection on; an address that is not among them is then looked up in
// the kernel's routes (a local route makes it the host's own as well).
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

// Own reports whether a (unmapped, no zone) is one of the host's own
// addresses: an address of one of its interfaces, or one the kernel
// routes to the host itself (a "local" route, which can cover a whole
// prefix with no interface address, as `ip route add local PREFIX dev lo`
// does). It fails, and the caller must refuse, when either cannot be read.
func (h *HostAddrs) Own(a netip.Addr) (bool, error) {
	a = a.Unmap().WithZone("")
	h.mu.Lock()
	if h.fd < 0 || h.changed() {
		h.stale = true
	}
	if h.stale {
		addrs, err := readHostAddrs()
		if err != nil {
			h.mu.Unlock()
			return false, fmt.Errorf("read the host's addresses: %w", err)
		}
		h.addrs, h.stale = addrs, false
	}
	own := h.addrs[a]
	h.mu.Unlock()
	if own {
		return true, nil
	}
	local, err := routeLocal(a)
	if err != nil {
		return false, fmt.Errorf("look up the route to %s: %w", a, err)
	}
	return local, nil
}

// routeLocal asks the kernel (RTM_GETROUTE) how it routes to a, and
// reports whether the route is local: a is delivered to the host itself.
// An address the host has no route to is not local.
func routeLocal(a netip.Addr) (bool, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return false, os.NewSyscallError("socket", err)
	}
	defer unix.Close(fd)
	// One second at most for the answer: the kernel answers at once.
	tv := unix.Timeval{Sec: 1}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return false, os.NewSyscallError("setsockopt", err)
	}
	if err := unix.Sendto(fd, routeRequest(a), 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return false, os.NewSyscallError("sendto", err)
	}
	buf := make([]byte, 4096)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false, os.NewSyscallError("recvfrom", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return false, fmt.Errorf("parse the route: %w", err)
		}
		for _, m := range msgs {
			switch m.Header.Type {
			case unix.NLMSG_ERROR:
				if len(m.Data) < 4 {
					return false, errors.New("short netlink error")
				}
				errno := -int32(binary.NativeEndian.Uint32(m.Data[:4]))
				switch e := unix.Errno(errno); {
				case errno == 0:
					continue
				case e == unix.ENETUNREACH, e == unix.EHOSTUNREACH:
					return false, nil
				default:
					return false, os.NewSyscallError("RTM_GETROUTE", e)
				}
			case unix.RTM_NEWROUTE:
				if len(m.Data) < unix.SizeofRtMsg {
					return false, errors.New("short route message")
				}
				// rtmsg: family, dst_len, src_len, tos, table, protocol,
				// scope, type.
				return m.Data[7] == unix.RTN_LOCAL, nil
			}
		}
	}
}

// routeRequest is the RTM_GETROUTE request for the route to a.
func routeRequest(a netip.Addr) []byte {
	family, bits := byte(unix.AF_INET), byte(32)
	if a.Is6() {
		family, bits = unix.AF_INET6, 128
	}
	dst := a.AsSlice()
	attrLen := unix.SizeofRtAttr + len(dst)
	size := unix.SizeofNlMsghdr + unix.SizeofRtMsg + (attrLen+3)&^3
	b := make([]byte, size)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], uint32(size))
	ne.PutUint16(b[4:], unix.RTM_GETROUTE)
	ne.PutUint16(b[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(b[8:], 1) // sequence
	r := b[unix.SizeofNlMsghdr:]
	r[0], r[1] = family, bits
	at := r[unix.SizeofRtMsg:]
	ne.PutUint16(at[0:], uint16(attrLen))
	ne.PutUint16(at[2:], unix.RTA_DST)
	copy(at[unix.SizeofRtAttr:], dst)
	return b
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
