package egress

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// HelperArg0 is argv[0] of the rootless namespace helper: a process of
// sbx's own binary that lives in a rootless sandbox's user and network
// namespaces and opens sockets there for sbx (see [RunHelper]).
const HelperArg0 = "sbx-nshelper"

// helperEnv marks the helper for the C constructor in nsjoin_linux.go.
const helperEnv = "_SBX_NSHELPER"

// maxHelperMsg bounds one request or reply of the helper's protocol.
const maxHelperMsg = 512

// Netns is a sandbox's network namespace as sbx reaches it: sockets opened
// through it belong to that namespace while sbx's process, in its own,
// accepts and dials out. As root sbx joins the namespace itself on a
// locked thread (setns); rootless it cannot (setns of a network namespace
// needs CAP_SYS_ADMIN in the caller's own user namespace too), so a
// helper process that has joined the sandbox's user namespace, where it
// holds every capability, opens the sockets and passes them back.
type Netns struct {
	path     string // /proc/PID/ns/net
	rootless bool   // through the helper

	mu     sync.Mutex
	helper *os.File  // rootless: sbx's end of the helper's socket
	proc   *exec.Cmd // rootless: the helper
}

// OpenNetns returns the network namespace of the sandbox whose PID 1 is
// pid. rootless starts the helper (the sandbox's user namespace must be
// one sbx's user owns); Close ends it.
func OpenNetns(pid int, rootless bool) (*Netns, error) {
	n := &Netns{path: "/proc/" + strconv.Itoa(pid) + "/ns/net", rootless: rootless}
	if !rootless {
		return n, nil
	}
	if err := n.startHelper(pid); err != nil {
		return nil, fmt.Errorf("namespace helper: %w", err)
	}
	return n, nil
}

// Path is the namespace's /proc/PID/ns/net.
func (n *Netns) Path() string { return n.path }

// Listen opens a TCP listener on addr (IP:PORT) in the namespace.
func (n *Netns) Listen(addr string) (net.Listener, error) {
	if !n.rootless {
		return ListenInNetns(n.path, addr)
	}
	f, err := n.ask("tcp " + addr)
	if err != nil {
		return nil, fmt.Errorf("listen in the sandbox's namespace on %s: %w", addr, err)
	}
	defer f.Close()
	return net.FileListener(f)
}

// ListenPacket opens a UDP socket bound to addr (IP:PORT) in the namespace.
func (n *Netns) ListenPacket(addr string) (net.PacketConn, error) {
	if !n.rootless {
		return ListenPacketInNetns(n.path, addr)
	}
	f, err := n.ask("udp " + addr)
	if err != nil {
		return nil, fmt.Errorf("listen in the sandbox's namespace on udp %s: %w", addr, err)
	}
	defer f.Close()
	return net.FilePacketConn(f)
}

// Dial connects to addr (IP:PORT, a listener of the sandbox's loopback)
// from inside the namespace.
func (n *Netns) Dial(addr string) (net.Conn, error) {
	if !n.rootless {
		var c net.Conn
		err := doInNetns(n.path, func() error {
			var err error
			c, err = net.Dial("tcp", addr)
			return err
		}, func() {
			if c != nil {
				c.Close()
			}
		})
		return c, err
	}
	f, err := n.ask("dial " + addr)
	if err != nil {
		return nil, fmt.Errorf("dial %s in the sandbox's namespace: %w", addr, err)
	}
	defer f.Close()
	return net.FileConn(f)
}

// AddLoopbackAddr puts a (an address that is not loopback: 127.0.0.0/8
// and ::1 are there already) on the namespace's lo, so that a listener
// can be bound to it and a client in the namespace that dials it reaches
// that listener. Needs CAP_NET_ADMIN in the namespace (root, or the
// helper).
func (n *Netns) AddLoopbackAddr(a netip.Addr) error {
	if !n.rootless {
		return doInNetns(n.path, func() error { return addLoopbackAddr(a) }, nil)
	}
	_, err := n.ask("addr " + a.String())
	return err
}

// Close ends the helper, if there is one (later calls then fail); sockets
// it opened stay open.
func (n *Netns) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.helper == nil {
		return nil
	}
	n.helper.Close() // EOF: the helper exits
	err := n.proc.Wait()
	n.helper = nil
	return err
}

// startHelper starts the helper in the namespaces of pid and waits for
// its first word.
func (n *Netns) startHelper(pid int) error {
	nsdir := "/proc/" + strconv.Itoa(pid) + "/ns/"
	userns, err := os.Open(nsdir + "user")
	if err != nil {
		return err
	}
	defer userns.Close()
	netns, err := os.Open(nsdir + "net")
	if err != nil {
		return err
	}
	defer netns.Close()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return os.NewSyscallError("socketpair", err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "nshelper"), os.NewFile(uintptr(fds[1]), "nshelper")
	cmd := &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{HelperArg0},
		Env:        []string{helperEnv + "=1"},
		ExtraFiles: []*os.File{userns, netns, theirs}, // fds 3, 4, 5
		Stderr:     os.Stderr,
	}
	err = cmd.Start()
	theirs.Close() // the helper's now: its exit is EOF here
	if err != nil {
		ours.Close()
		return err
	}
	n.helper, n.proc = ours, cmd
	if _, err := n.ask("hello"); err != nil {
		n.Close()
		if errors.Is(err, io.EOF) {
			return errors.New("it ended before it was ready (its error is above)")
		}
		return err
	}
	return nil
}

// ask sends one request and reads its reply: the file passed with it (nil
// if none) or the helper's error.
func (n *Netns) ask(req string) (*os.File, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.helper == nil {
		return nil, errors.New("namespace helper: closed")
	}
	fd := int(n.helper.Fd())
	if err := unix.Sendmsg(fd, []byte(req), nil, nil, 0); err != nil {
		return nil, os.NewSyscallError("sendmsg", err)
	}
	buf := make([]byte, maxHelperMsg)
	oob := make([]byte, unix.CmsgSpace(4))
	m, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("recvmsg", err)
	}
	var f *os.File
	if oobn > 0 {
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err == nil && len(msgs) == 1 {
			if got, err := unix.ParseUnixRights(&msgs[0]); err == nil && len(got) == 1 {
				f = os.NewFile(uintptr(got[0]), "nshelper-socket")
			}
		}
	}
	reply := string(buf[:m])
	switch {
	case m == 0:
		return nil, io.EOF
	case reply == "ok":
		return f, nil
	}
	if f != nil {
		f.Close()
	}
	return nil, errors.New(strings.TrimPrefix(reply, "error "))
}

// RunHelper is the helper's main, once the C constructor has joined the
// sandbox's namespaces: it brings lo up, then answers sbx's requests on
// fd 5 until sbx closes it, and returns the exit status.
func RunHelper() int {
	os.Unsetenv(helperEnv)
	conn := 5
	unix.CloseOnExec(conn)
	if err := loopbackUp(); err != nil {
		fmt.Fprintf(os.Stderr, "sbx: namespace helper: %v\n", err)
		return 125
	}
	buf := make([]byte, maxHelperMsg)
	for {
		m, _, _, _, err := unix.Recvmsg(conn, buf, nil, 0)
		if err != nil || m == 0 {
			return 0 // sbx is done (or gone)
		}
		f, err := serveHelper(string(buf[:m]))
		reply, oob := []byte("ok"), []byte(nil)
		if err != nil {
			reply = []byte("error " + err.Error())
		} else if f != nil {
			oob = unix.UnixRights(int(f.Fd()))
		}
		err = unix.Sendmsg(conn, reply, oob, nil, 0)
		if f != nil {
			f.Close()
		}
		if err != nil {
			return 0
		}
	}
}

// serveHelper does one request in the helper: the socket it made, if any.
func serveHelper(req string) (*os.File, error) {
	verb, arg, _ := strings.Cut(req, " ")
	switch verb {
	case "hello":
		return nil, nil
	case "tcp":
		ap, err := netip.ParseAddrPort(arg)
		if err != nil {
			return nil, err
		}
		ln, err := listenHere(ap)
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		return ln.(*net.TCPListener).File()
	case "udp":
		ap, err := netip.ParseAddrPort(arg)
		if err != nil {
			return nil, err
		}
		pc, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(ap))
		if err != nil {
			return nil, err
		}
		defer pc.Close()
		return pc.File()
	case "dial":
		c, err := net.Dial("tcp", arg)
		if err != nil {
			return nil, err
		}
		defer c.Close()
		return c.(*net.TCPConn).File()
	case "addr":
		a, err := netip.ParseAddr(arg)
		if err != nil {
			return nil, err
		}
		return nil, addLoopbackAddr(a)
	}
	return nil, fmt.Errorf("unknown request %q", verb)
}

// addLoopbackAddr adds a (a host address: /32 or /128) to lo of the
// calling thread's namespace, bringing lo up if it is down; an address
// already there is no error.
func addLoopbackAddr(a netip.Addr) error {
	if err := loopbackUp(); err != nil {
		return err
	}
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("add %s to lo: %w", a, err)
	}
	pfx := netip.PrefixFrom(a, a.BitLen())
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: a.AsSlice(), Mask: net.CIDRMask(pfx.Bits(), a.BitLen())}}
	if a.Is6() {
		addr.Flags = unix.IFA_F_NODAD // usable at once
	}
	if err := netlink.AddrAdd(lo, addr); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("add %s to lo: %w", a, err)
	}
	return nil
}
