package egress

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/internal/sbxtest"
)

// soNetnsCookie is SO_NETNS_COOKIE (Linux 5.14, asm-generic value; not in
// x/sys yet): the id of the network namespace a socket lives in.
const soNetnsCookie = 71

// newNetns creates a network namespace (only lo, down) that lives until
// the test ends, and returns a path that opens it.
func newNetns(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		sbxtest.Skip(t, sbxtest.Root, "needs root: creates a network namespace")
	}
	type result struct {
		f   *os.File
		err error
	}
	ch := make(chan result, 1)
	go func() {
		// Never unlocked: the thread, now in the new namespace, exits
		// with this goroutine instead of running others.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			ch <- result{err: fmt.Errorf("unshare: %w", err)}
			return
		}
		f, err := os.Open("/proc/thread-self/ns/net")
		ch <- result{f, err}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatalf("create network namespace: %v", r.err)
	}
	t.Cleanup(func() { r.f.Close() })
	return fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), r.f.Fd())
}

// inNetns runs fn on a thread in the namespace at path. The thread is
// thrown away afterwards.
func inNetns(path string, fn func() error) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked, see newNetns
		f, err := os.Open(path)
		if err != nil {
			ch <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- fmt.Errorf("setns: %w", err)
			return
		}
		ch <- fn()
	}()
	return <-ch
}

// dialIn connects to addr from inside the namespace at path.
func dialIn(path, addr string) (net.Conn, error) {
	var c net.Conn
	err := inNetns(path, func() (err error) {
		c, err = net.Dial("tcp", addr)
		return err
	})
	return c, err
}

func netnsCookie(t *testing.T, sc syscall.Conn) uint64 {
	t.Helper()
	raw, err := sc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var cookie uint64
	var gerr error
	raw.Control(func(fd uintptr) { cookie, gerr = unix.GetsockoptUint64(int(fd), unix.SOL_SOCKET, soNetnsCookie) })
	if gerr != nil {
		t.Fatalf("SO_NETNS_COOKIE: %v", gerr)
	}
	return cookie
}

// hostNetns is the network namespace the test binary started in, read
// before any test could move a thread.
var hostNetns, _ = os.Readlink("/proc/thread-self/ns/net")

// threadsHome waits until every thread of this process is in the host
// network namespace again: a thread that ListenInNetns failed to bring
// back would stay out (and be reused by other goroutines). The main
// thread is not checked: when a goroutine of newNetns or inNetns that
// ends locked happens to run on it, Go parks it for good instead of
// ending it.
func threadsHome(t *testing.T) {
	t.Helper()
	main := strconv.Itoa(os.Getpid())
	var away []string
	eventually(t, "every thread back in the host network namespace", func() bool {
		away = away[:0]
		tasks, _ := filepath.Glob("/proc/self/task/*")
		for _, task := range tasks {
			if filepath.Base(task) == main {
				continue
			}
			if ns, err := os.Readlink(task + "/ns/net"); err == nil && ns != hostNetns {
				away = append(away, filepath.Base(task)+" in "+ns)
			}
		}
		return len(away) == 0
	})
}

func TestListenInNetns(t *testing.T) {
	ns := newNetns(t)
	// lo starts down in a new namespace: nothing on 127.0.0.1 is reachable.
	err := inNetns(ns, func() error {
		_, err := net.Dial("tcp", "127.0.0.1:1")
		return err
	})
	if !errors.Is(err, unix.ENETUNREACH) {
		t.Fatalf("dial in a fresh namespace: %v, want ENETUNREACH (lo down)", err)
	}

	ln, err := ListenInNetns(ns, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	threadsHome(t)

	// The listening socket lives in the namespace, not in ours.
	var inside uint64
	if err := inNetns(ns, func() error {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer l.Close()
		inside = netnsCookie(t, l.(*net.TCPListener))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	host, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hostCookie := netnsCookie(t, host.(*net.TCPListener))
	host.Close()
	if got := netnsCookie(t, ln.(*net.TCPListener)); got != inside || got == hostCookie {
		t.Fatalf("listener netns cookie %d, want %d (the namespace's), host's is %d", got, inside, hostCookie)
	}

	// A client inside reaches it; we accept from outside.
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	c, err := dialIn(ns, ln.Addr().String())
	if err != nil {
		t.Fatalf("dial from inside: %v", err)
	}
	defer c.Close()
	s, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	defer s.Close()
	if _, err := s.Write([]byte("hi")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 2)
	if _, err := c.Read(b); err != nil || string(b) != "hi" {
		t.Fatalf("read %q %v", b, err)
	}
	threadsHome(t)
}

func TestListenInNetnsErrors(t *testing.T) {
	ns := newNetns(t)
	cases := []struct{ path, addr string }{
		{ns, "localhost:0"}, // names are not resolved
		{ns, "127.0.0.1"},
		{ns, "[fe80::1%lo]:0"},
		{"/nonexistent/ns/net", "127.0.0.1:0"},
		{"/proc/self/ns/mnt", "127.0.0.1:0"}, // not a network namespace
	}
	for _, c := range cases {
		ln, err := ListenInNetns(c.path, c.addr)
		if err == nil {
			ln.Close()
			t.Errorf("ListenInNetns(%s, %s) succeeded", c.path, c.addr)
			continue
		}
		t.Logf("ListenInNetns(%s, %s): %v", c.path, c.addr, err)
	}
	threadsHome(t)
}

func TestProxyInNetns(t *testing.T) {
	// The real layout: clients in a namespace of their own, with nothing
	// but lo; the proxy's listener in there; the destination (a server on
	// the host's loopback) reachable only through the proxy.
	ns := newNetns(t)
	echo := echoServer(t)
	port := strconv.Itoa(int(echo.Port()))
	ln, err := ListenInNetns(ns, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tp := serveProxy(t, ln, []string{"allowed.test:" + port, "127.0.0.1:" + port},
		map[string]string{"allowed.test": "127.0.0.1", "evil.test": "127.0.0.1"}, nil)

	if _, err := dialIn(ns, echo.String()); !errors.Is(err, unix.ECONNREFUSED) {
		t.Fatalf("direct dial from inside to %s: %v, want ECONNREFUSED", echo, err)
	}
	c, err := dialIn(ns, tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	resp, tun := connectOn(t, c, "allowed.test:"+port)
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT from inside: %s", resp.Status)
	}
	echoOnce(t, tun, "from the namespace to the host")
	tun.Close()

	c, err = dialIn(ns, tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	resp, _ = connectOn(t, c, "evil.test:"+port)
	if resp.StatusCode != 403 {
		t.Fatalf("denied CONNECT from inside: %s", resp.Status)
	}
	if d := tp.denials(); len(d) != 1 || d[0].String() != "connect evil.test:"+port+" (not allowed)" {
		t.Errorf("reported %v", d)
	}
	threadsHome(t)
}
