package egress

import (
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// settles waits until the goroutine count is back to at most base.
func settles(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, want at most %d:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestManyTunnels(t *testing.T) {
	const n = 50
	echo := echoServer(t)
	tp := startProxy(t, []string{echo.String()}, nil, nil)
	// Warm up: a first connection starts the runtime's own goroutines.
	if resp, c := connectVia(t, tp.addr, echo.String()); resp.StatusCode == 200 {
		c.Close()
	}
	settlesTunnels(t, tp)
	base := runtime.NumGoroutine()

	conns := make([]net.Conn, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range conns {
		resp, c := connectVia(t, tp.addr, echo.String())
		if resp.StatusCode != 200 {
			t.Fatalf("tunnel %d: %s", i, resp.Status)
		}
		conns[i] = c
	}
	// All 50 open at once, each moving 256 KiB both ways concurrently.
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := make([]byte, 256<<10)
			rand.Read(msg)
			go c.Write(msg)
			got := make([]byte, len(msg))
			c.SetReadDeadline(time.Now().Add(20 * time.Second))
			if _, err := io.ReadFull(c, got); err != nil {
				errs <- err
				return
			}
			if string(got) != string(msg) {
				errs <- errors.New("echo differs")
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := openTunnels(tp); got != n {
		t.Errorf("%d tunnels tracked, want %d", got, n)
	}
	for _, c := range conns {
		c.Close()
	}
	settlesTunnels(t, tp)
	settles(t, base)
	// The accept loop holds one connection slot while it waits.
	if len(tp.slots) != 0 || len(tp.conns) > 1 {
		t.Errorf("slots still taken: %d tunnels, %d connections", len(tp.slots), len(tp.conns))
	}
}

func openTunnels(tp *testProxy) int {
	tp.Proxy.mu.Lock()
	defer tp.Proxy.mu.Unlock()
	return len(tp.Proxy.tunnels)
}

func settlesTunnels(t *testing.T, tp *testProxy) {
	t.Helper()
	eventually(t, "tunnels to close", func() bool { return openTunnels(tp) == 0 && len(tp.slots) == 0 })
}

func TestCloseEndsTunnels(t *testing.T) {
	echo := echoServer(t)
	base := runtime.NumGoroutine()
	tp := startProxy(t, []string{echo.String()}, nil, nil)
	var conns []net.Conn
	for i := 0; i < 10; i++ {
		resp, c := connectVia(t, tp.addr, echo.String())
		if resp.StatusCode != 200 {
			t.Fatal(resp.Status)
		}
		echoOnce(t, c, "x")
		conns = append(conns, c)
	}
	// An idle client connection, too.
	idle, err := net.Dial("tcp", tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if err := tp.Close(); err != nil {
		t.Fatal(err)
	}
	for i, c := range append(conns, idle) {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := c.Read(make([]byte, 1))
		if ne, ok := err.(net.Error); err == nil || ok && ne.Timeout() {
			t.Errorf("connection %d still open after Close: %v", i, err)
		}
		c.Close()
	}
	if err := <-tp.served; !errors.Is(err, ErrClosed) {
		t.Errorf("Serve: %v", err)
	}
	tp.served <- ErrClosed // for the cleanup's check
	settles(t, base+1)     // + the echo server's accept loop
	// A closed proxy serves nothing more.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Serve(ln); !errors.Is(err, ErrClosed) {
		t.Errorf("Serve after Close: %v", err)
	}
}

func TestMaxTunnels(t *testing.T) {
	echo := echoServer(t)
	tp := startProxy(t, []string{echo.String()}, nil, &Proxy{MaxTunnels: 2})
	var held []net.Conn
	for i := 0; i < 2; i++ {
		resp, c := connectVia(t, tp.addr, echo.String())
		if resp.StatusCode != 200 {
			t.Fatalf("tunnel %d: %s", i, resp.Status)
		}
		held = append(held, c)
	}
	resp, c := connectVia(t, tp.addr, echo.String())
	if c != nil {
		t.Fatal("a third tunnel opened with MaxTunnels 2")
	}
	if text := body(t, resp); resp.StatusCode != 503 || !strings.Contains(text, "too many tunnels: limit 2") {
		t.Errorf("third tunnel: %s %q, want 503", resp.Status, text)
	}
	if d := tp.denials(); len(d) != 1 || d[0].Reason != "too many tunnels: limit 2" || d[0].Host != "127.0.0.1" {
		t.Errorf("reported %v", d)
	}
	// The held tunnels still work, and closing one frees its slot.
	echoOnce(t, held[0], "still here")
	held[1].Close()
	eventually(t, "a slot to free", func() bool { return len(tp.slots) == 1 })
	resp, c = connectVia(t, tp.addr, echo.String())
	if resp.StatusCode != 200 {
		t.Fatalf("after a slot freed: %s", resp.Status)
	}
	echoOnce(t, c, "again")
	c.Close()
	held[0].Close()
}

func TestMaxConns(t *testing.T) {
	tp := startProxy(t, nil, nil, &Proxy{MaxConns: 1})
	first, err := net.Dial("tcp", tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	// The second connection waits in the kernel's backlog: no answer...
	second, err := net.Dial("tcp", tp.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	io.WriteString(second, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	second.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := second.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("second connection served while the first is open: %v", err)
	}
	// ...until the first closes.
	first.Close()
	second.SetReadDeadline(time.Now().Add(10 * time.Second))
	b := make([]byte, 12)
	if _, err := io.ReadFull(second, b); err != nil || string(b) != "HTTP/1.1 400" {
		t.Fatalf("second connection: %q %v", b, err)
	}
}

func TestIdleTimeout(t *testing.T) {
	const idle = 300 * time.Millisecond
	// The upstream sends one byte every 50 ms for 1.2 s, then falls silent.
	ticker := serveConns(t, func(c net.Conn) {
		for i := 0; i < 24; i++ {
			if _, err := c.Write([]byte{'.'}); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		c.Read(make([]byte, 1)) // silent until the tunnel closes
	})
	echo := echoServer(t)
	tp := startProxy(t, []string{echo.String(), ticker.String()}, nil, &Proxy{IdleTimeout: idle})

	t.Run("silent", func(t *testing.T) {
		resp, c := connectVia(t, tp.addr, echo.String())
		if resp.StatusCode != 200 {
			t.Fatal(resp.Status)
		}
		defer c.Close()
		echoOnce(t, c, "then silence")
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("silent tunnel: %v, want EOF from the idle timeout", err)
		}
	})
	t.Run("one-way", func(t *testing.T) {
		// Bytes flowing one way keep the tunnel open although the client
		// never writes: 4 idle periods long.
		resp, c := connectVia(t, tp.addr, ticker.String())
		if resp.StatusCode != 200 {
			t.Fatal(resp.Status)
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		got, err := io.ReadAll(c)
		if len(got) != 24 || err != nil {
			t.Fatalf("got %d of 24 bytes, then %v: the tunnel closed while bytes flowed", len(got), err)
		}
	})
	settlesTunnels(t, tp)
}
