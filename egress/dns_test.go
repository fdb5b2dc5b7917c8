package egress

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"
)

// query builds a DNS query for name (type A) with id.
func query(id uint16, flags uint16, name string, questions uint16) []byte {
	q := make([]byte, 12)
	binary.BigEndian.PutUint16(q[0:], id)
	binary.BigEndian.PutUint16(q[2:], flags)
	binary.BigEndian.PutUint16(q[4:], questions)
	for _, l := range splitLabels(name) {
		q = append(q, byte(len(l)))
		q = append(q, l...)
	}
	return append(q, 0, 0, 1, 0, 1)
}

func splitLabels(name string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(name); i++ {
		if i == len(name) || name[i] == '.' {
			out = append(out, name[start:i])
			start = i + 1
		}
	}
	return out
}

// TestNXDomain: a query gets its id and question back with QR, RA, RD as
// asked and RCODE NXDOMAIN; what is not one query is ignored.
func TestNXDomain(t *testing.T) {
	for _, tc := range []struct {
		name  string
		q     []byte
		ok    bool
		host  string
		flags uint16
	}{
		{"query", query(0x1234, dnsRD, "example.com", 1), true, "example.com", dnsQR | dnsRD | dnsRA | dnsNXDomain},
		{"no recursion", query(7, 0, "a.b.test", 1), true, "a.b.test", dnsQR | dnsRA | dnsNXDomain},
		{"a response", query(7, dnsQR, "example.com", 1), false, "", 0},
		{"two questions", query(7, 0, "example.com", 2), false, "", 0},
		{"short", []byte{1, 2, 3}, false, "", 0},
		{"truncated name", query(7, 0, "example.com", 1)[:16], false, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reply, host, ok := nxdomain(tc.q)
			if ok != tc.ok || host != tc.host {
				t.Fatalf("ok %v host %q, want %v %q", ok, host, tc.ok, tc.host)
			}
			if !ok {
				return
			}
			if len(reply) != len(tc.q) || binary.BigEndian.Uint16(reply) != binary.BigEndian.Uint16(tc.q) {
				t.Errorf("reply %x: want the query's id and question back", reply)
			}
			if f := binary.BigEndian.Uint16(reply[2:]); f != tc.flags {
				t.Errorf("flags %#x, want %#x", f, tc.flags)
			}
			if string(reply[12:]) != string(tc.q[12:]) {
				t.Errorf("question %x, want %x", reply[12:], tc.q[12:])
			}
		})
	}
}

// TestServeNXDomain: over a real loopback socket, a query is answered
// NXDOMAIN and reported; Go's resolver pointed at it fails at once.
func TestServeNXDomain(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	names := make(chan string, 4)
	done := make(chan error, 1)
	go func() { done <- ServeNXDomain(pc, func(n string) { names <- n }) }()
	c, err := net.Dial("udp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write(query(42, dnsRD, "example.com", 1)); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	if binary.BigEndian.Uint16(buf) != 42 || buf[3]&0xf != dnsNXDomain || n < 12 {
		t.Errorf("reply %x: want id 42, NXDOMAIN", buf[:n])
	}
	if got := <-names; got != "example.com" {
		t.Errorf("reported %q, want example.com", got)
	}
	pc.Close()
	if err := <-done; err != nil {
		t.Errorf("ServeNXDomain after close: %v", err)
	}
}

// TestServeDNSKnownName: a known name's A query is answered with its
// address (NOERROR, one record, TTL 5) and its AAAA query with no records;
// only unknown names are reported.
func TestServeDNSKnownName(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	names := make(chan string, 4)
	lookup := func(n string) (netip.Addr, bool) {
		return netip.MustParseAddr("127.0.1.1"), n == "api.test"
	}
	go ServeDNS(pc, lookup, func(n string) { names <- n })
	c, err := net.Dial("udp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ask := func(q []byte) []byte {
		t.Helper()
		if _, err := c.Write(q); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 512)
		n, err := c.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		return buf[:n]
	}
	a := ask(query(1, dnsRD, "API.test", 1))
	if rcode, an := a[3]&0xf, binary.BigEndian.Uint16(a[6:]); rcode != 0 || an != 1 || string(a[len(a)-4:]) != "\x7f\x00\x01\x01" {
		t.Errorf("A api.test: rcode %d, %d answers, reply %x; want 127.0.1.1", rcode, an, a)
	}
	aaaa := query(2, dnsRD, "api.test", 1)
	aaaa[len(aaaa)-3] = 28 // type AAAA
	if r := ask(aaaa); r[3]&0xf != 0 || binary.BigEndian.Uint16(r[6:]) != 0 {
		t.Errorf("AAAA api.test: reply %x; want NOERROR, no records", r)
	}
	if r := ask(query(3, dnsRD, "evil.test", 1)); r[3]&0xf != dnsNXDomain {
		t.Errorf("A evil.test: reply %x; want NXDOMAIN", r)
	}
	if n := <-names; n != "evil.test" {
		t.Errorf("reported %q, want evil.test only", n)
	}
}
