package egress

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// connect serves CONNECT host:port: check, resolve, dial, then tunnel.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	if r.URL.Host == "" || r.URL.Path != "" {
		plainError(w, http.StatusBadRequest, "CONNECT needs host:port")
		return
	}
	h, port, err := net.SplitHostPort(r.Host)
	if err != nil {
		p.refuse(w, printable(r.Host), 0, deny(http.StatusBadRequest, "invalid target (want host:port)"))
		return
	}
	host, n, ref := p.checkTarget(h, port, 0)
	if ref != nil {
		p.refuse(w, host, n, ref)
		return
	}
	if !p.acquire() {
		p.refuse(w, host, n, deny(http.StatusServiceUnavailable, "too many tunnels: limit "+strconv.Itoa(p.MaxTunnels)))
		return
	}
	defer p.release()
	up, err := p.dial(r.Context(), host, n)
	if err != nil {
		p.refuse(w, host, n, asRefusal(err))
		return
	}
	client, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		up.Close()
		plainError(w, http.StatusInternalServerError, "cannot take over the connection")
		return
	}
	p.runTunnel(client, up, func() error {
		client.SetReadDeadline(time.Time{})
		client.SetWriteDeadline(time.Now().Add(p.IdleTimeout))
		if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return err
		}
		// Bytes the client sent right behind the request (a TLS
		// ClientHello that did not wait for the 200) are in the
		// server's read buffer.
		if n := brw.Reader.Buffered(); n > 0 {
			b, _ := brw.Reader.Peek(n)
			up.SetWriteDeadline(time.Now().Add(p.IdleTimeout))
			if _, err := up.Write(b); err != nil {
				return err
			}
		}
		return nil
	})
}

// runTunnel tracks a tunnel between client and up (so that Close ends
// it), runs start (the protocol's opening, if any; an error closes both)
// and then the tunnel, until either side is done. The CONNECT tunnels and
// the transparent forwarders share it.
func (p *Proxy) runTunnel(client, up net.Conn, start func() error) {
	t := &tunnel{client: client, up: up, idle: p.IdleTimeout}
	if !p.track(t) {
		t.close()
		return
	}
	defer p.untrack(t)
	if start != nil {
		if err := start(); err != nil {
			t.close()
			return
		}
	}
	t.run()
}

func asRefusal(err error) *refusal {
	var ref *refusal
	if errors.As(err, &ref) {
		return ref
	}
	return &refusal{status: http.StatusBadGateway, reason: errText(err)}
}

func (p *Proxy) track(t *tunnel) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.tunnels[t] = struct{}{}
	return true
}

func (p *Proxy) untrack(t *tunnel) {
	p.mu.Lock()
	delete(p.tunnels, t)
	p.mu.Unlock()
}

// tunnel moves bytes both ways between a client and its upstream until
// both sides finished, one side failed, or nothing moved for idle.
type tunnel struct {
	client, up net.Conn
	idle       time.Duration
	last       atomic.Int64 // unix nanoseconds of the last byte moved
	closeOnce  sync.Once
}

func (t *tunnel) run() {
	t.last.Store(time.Now().UnixNano())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t.pipe(t.up, t.client)
	}()
	t.pipe(t.client, t.up)
	<-done
	t.close()
}

func (t *tunnel) close() {
	t.closeOnce.Do(func() {
		t.client.Close()
		t.up.Close()
	})
}

// pipe copies src to dst with a fixed buffer. At src's EOF it half-closes
// dst so the other direction can finish; on any other end it closes both.
// Between two TCP connections it splices instead (see splice).
func (t *tunnel) pipe(dst, src net.Conn) {
	if d, ok := dst.(*net.TCPConn); ok {
		if s, ok := src.(*net.TCPConn); ok {
			t.splice(d, s)
			return
		}
	}
	buf := getBuffer()
	defer putBuffer(buf)
	for {
		deadline := time.Unix(0, t.last.Load()).Add(t.idle)
		if !deadline.After(time.Now()) {
			t.close() // idle in both directions
			return
		}
		src.SetReadDeadline(deadline)
		n, err := src.Read(*buf)
		if n > 0 {
			t.last.Store(time.Now().UnixNano())
			dst.SetWriteDeadline(time.Now().Add(t.idle))
			if _, werr := dst.Write((*buf)[:n]); werr != nil {
				t.close()
				return
			}
			t.last.Store(time.Now().UnixNano())
		}
		switch {
		case err == nil:
		case errors.Is(err, os.ErrDeadlineExceeded):
			// The other direction may have moved bytes meanwhile: the
			// loop recomputes the deadline from the last activity.
		case errors.Is(err, io.EOF):
			if cw, ok := dst.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
				return
			}
			t.close()
			return
		default:
			t.close()
			return
		}
	}
}

// spliceChunk is what one splice call may move before the idle watch
// sees the progress.
const spliceChunk = 256 << 10

// splice is pipe without copying through sbx's memory: Go's
// TCPConn.ReadFrom from a TCP source splices on Linux (socket to a pipe
// to socket, in the kernel), here in chunks of spliceChunk so that each
// chunk counts as activity for the idle watch, with the same deadlines as
// pipe (a read waits until IdleTimeout after the last activity of either
// direction, a write makes progress within IdleTimeout).
func (t *tunnel) splice(dst, src *net.TCPConn) {
	lr := &io.LimitedReader{R: src}
	for {
		now := time.Now()
		deadline := time.Unix(0, t.last.Load()).Add(t.idle)
		if !deadline.After(now) {
			t.close() // idle in both directions
			return
		}
		// Setting a deadline fails only on a closed connection, which
		// ReadFrom below reports.
		_ = src.SetReadDeadline(deadline)
		wdl := now.Add(t.idle)
		_ = dst.SetWriteDeadline(wdl)
		lr.N = spliceChunk
		n, err := dst.ReadFrom(lr)
		if n > 0 {
			t.last.Store(time.Now().UnixNano())
		}
		switch {
		case err == nil && lr.N > 0:
			// src's EOF (ReadFrom stops short without an error).
			if dst.CloseWrite() != nil {
				t.close()
			}
			return
		case err == nil:
		case errors.Is(err, os.ErrDeadlineExceeded) && time.Now().Before(wdl):
			// The read deadline: the other direction may have moved
			// bytes meanwhile; the loop recomputes it. (A write that
			// timed out may have lost bytes in the pipe: closed below.)
		default:
			t.close()
			return
		}
	}
}

// bufSize is the copy buffer of each direction of a tunnel or forward.
const bufSize = 32 << 10

var buffers = sync.Pool{New: func() any { b := make([]byte, bufSize); return &b }}

func getBuffer() *[]byte  { return buffers.Get().(*[]byte) }
func putBuffer(b *[]byte) { buffers.Put(b) }

// bufferPool lends the same buffers to httputil.ReverseProxy.
type bufferPool struct{}

func (bufferPool) Get() []byte  { return *getBuffer() }
func (bufferPool) Put(b []byte) { putBuffer(&b) }

// limitListener stops accepting while slots is full; a slot is freed when
// the accepted connection is closed.
type limitListener struct {
	net.Listener
	slots chan struct{}
	done  <-chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &slotConn{Conn: c, slots: l.slots}, nil
}

type slotConn struct {
	net.Conn
	slots chan struct{}
	once  sync.Once
}

func (c *slotConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { <-c.slots })
	return err
}

func (c *slotConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.New("half-close not supported")
}
