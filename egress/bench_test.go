package egress

import (
	"io"
	"net"
	"testing"
)

// BenchmarkTunnel compares a CONNECT tunnel and a transparent forwarder
// (ServeForward, what a client that ignores the proxy variables gets) with
// a direct loopback connection to the same echo server: throughput (64
// KiB chunks, both directions at once) and the round trip of one byte (the
// latency each adds).
func BenchmarkTunnel(b *testing.B) {
	echo := echoServer(b)
	tp := startProxy(b, []string{echo.String()}, nil, nil)
	fln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go tp.ServeForward(fln, echo.Addr().String(), echo.Port())
	dial := map[string]func(b *testing.B) net.Conn{
		"direct": func(b *testing.B) net.Conn {
			c, err := net.Dial("tcp", echo.String())
			if err != nil {
				b.Fatal(err)
			}
			return c
		},
		"proxy": func(b *testing.B) net.Conn {
			resp, c := connectVia(b, tp.addr, echo.String())
			if resp.StatusCode != 200 {
				b.Fatal(resp.Status)
			}
			return c
		},
		"forward": func(b *testing.B) net.Conn {
			c, err := net.Dial("tcp", fln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			return c
		},
	}
	for _, via := range []string{"direct", "proxy", "forward"} {
		b.Run(via+"/throughput", func(b *testing.B) {
			c := dial[via](b)
			defer c.Close()
			chunk := make([]byte, 64<<10)
			b.SetBytes(int64(len(chunk)))
			b.ResetTimer()
			go func() {
				for i := 0; i < b.N; i++ {
					if _, err := c.Write(chunk); err != nil {
						return
					}
				}
			}()
			if _, err := io.CopyN(io.Discard, c, int64(b.N)*int64(len(chunk))); err != nil {
				b.Fatal(err)
			}
		})
		b.Run(via+"/roundtrip", func(b *testing.B) {
			c := dial[via](b)
			defer c.Close()
			buf := []byte{0}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := c.Write(buf); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("proxy/setup", func(b *testing.B) {
		// CONNECT, check, dial and 200: the cost of opening a tunnel.
		for i := 0; i < b.N; i++ {
			dial["proxy"](b).Close()
		}
	})
}
