package egress

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"
)

// forward serves an absolute-form request (GET http://host/path) by
// sending it on to the checked destination.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request) {
	if r.URL.Scheme != "http" {
		plainError(w, http.StatusNotImplemented, "only http:// URLs are forwarded (https goes through CONNECT)")
		return
	}
	if r.Header.Get("Upgrade") != "" {
		plainError(w, http.StatusNotImplemented, "protocol upgrades are not forwarded (use wss:// through CONNECT)")
		return
	}
	host, n, ref := p.checkTarget(r.URL.Hostname(), r.URL.Port(), 80)
	if ref != nil {
		p.refuse(w, host, n, ref)
		return
	}
	if !p.acquire() {
		p.refuse(w, host, n, deny(http.StatusServiceUnavailable, "too many tunnels: limit "+strconv.Itoa(p.MaxTunnels)))
		return
	}
	defer p.release()

	// Client side: every read and write must make progress within
	// IdleTimeout (the server's own timeouts cover headers only).
	// The server sets its read deadline again for the next request, but
	// not its write deadline.
	rc := http.NewResponseController(w)
	defer rc.SetWriteDeadline(time.Time{})
	if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
		b := &idleBody{ReadCloser: r.Body, rc: rc, idle: p.IdleTimeout}
		r = r.WithContext(context.WithValue(r.Context(), idleBodyKey{}, b))
		r.Body = b
	}
	p.fwd.ServeHTTP(&idleWriter{ResponseWriter: w, rc: rc, idle: p.IdleTimeout}, r)
}

// dialForward is the transport's dialer: addr is the request URL's
// host:port, checked again here (the transport may dial for any request).
func (p *Proxy) dialForward(ctx context.Context, network, addr string) (net.Conn, error) {
	h, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, deny(http.StatusBadRequest, "invalid target")
	}
	host, n, ref := p.checkTarget(h, port, 0)
	if ref != nil {
		return nil, ref
	}
	c, err := p.dial(ctx, host, n)
	if err != nil {
		return nil, err
	}
	return &idleConn{Conn: c, idle: p.IdleTimeout}, nil
}

// forwardError answers a forwarded request that failed.
func (p *Proxy) forwardError(w http.ResponseWriter, r *http.Request, err error) {
	host, n, _ := p.checkTarget(r.URL.Hostname(), r.URL.Port(), 80)
	var ref *refusal
	var ne net.Error
	switch b, _ := r.Context().Value(idleBodyKey{}).(*idleBody); {
	case b != nil && b.timedOut.Load():
		// Checked first: the server cancels the request's context when a
		// read from the client fails.
		ref = &refusal{status: http.StatusRequestTimeout, reason: "request body stalled"}
	case errors.Is(err, context.Canceled):
		return // client gone or proxy closing: nobody to answer
	case errors.As(err, &ref):
	case errors.As(err, &ne) && ne.Timeout():
		ref = &refusal{status: http.StatusGatewayTimeout, reason: "upstream timed out"}
	default:
		ref = &refusal{status: http.StatusBadGateway, reason: "upstream: " + errText(err)}
	}
	p.refuse(w, host, n, ref)
}

// idleConn gives each read and write of an upstream connection IdleTimeout
// to make progress. An idle pooled connection thus closes after that long.
type idleConn struct {
	net.Conn
	idle time.Duration
}

func (c *idleConn) Read(b []byte) (int, error) {
	c.Conn.SetReadDeadline(time.Now().Add(c.idle))
	return c.Conn.Read(b)
}

func (c *idleConn) Write(b []byte) (int, error) {
	c.Conn.SetWriteDeadline(time.Now().Add(c.idle))
	return c.Conn.Write(b)
}

// idleWriter gives each write to the client IdleTimeout.
type idleWriter struct {
	http.ResponseWriter
	rc   *http.ResponseController
	idle time.Duration
}

func (w *idleWriter) Write(b []byte) (int, error) {
	w.rc.SetWriteDeadline(time.Now().Add(w.idle))
	return w.ResponseWriter.Write(b)
}

func (w *idleWriter) FlushError() error {
	w.rc.SetWriteDeadline(time.Now().Add(w.idle))
	return w.rc.Flush()
}

func (w *idleWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// idleBody gives each read of the client's request body IdleTimeout. At the
// end of the body it lifts the deadline (the server keeps reading the
// connection in the background, to notice a client that goes away); after
// a timeout it leaves it passed, so that the server's own reading of the
// rest of the body fails at once too.
type idleBody struct {
	io.ReadCloser
	rc       *http.ResponseController
	idle     time.Duration
	timedOut atomic.Bool
}

// idleBodyKey finds a request's idleBody from its context (the reverse
// proxy hands its error handler a copy of the request).
type idleBodyKey struct{}

func (b *idleBody) Read(p []byte) (int, error) {
	b.rc.SetReadDeadline(time.Now().Add(b.idle))
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == io.EOF:
		b.rc.SetReadDeadline(time.Time{})
	case errors.Is(err, os.ErrDeadlineExceeded):
		b.timedOut.Store(true)
	}
	return n, err
}
