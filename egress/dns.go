package egress

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"strings"
)

// ResolvConf is the /etc/resolv.conf sbx gives a sandbox without a host
// network: the one resolver is 127.0.0.1 in the sandbox's own namespace,
// where [ServeNXDomain] answers (or, where sbx cannot serve it, nothing
// listens and the query is refused at once). One attempt, one second at
// most: nothing beyond it could answer anyway.
const ResolvConf = "# sbx: the sandbox has no DNS (sbx run --allow-host HOST lets a host through sbx's proxy)\n" +
	"nameserver 127.0.0.1\noptions timeout:1 attempts:1\n"

// DNS header flags of an answer: QR (response), RD copied from the query,
// RA, and RCODE 3 (NXDOMAIN).
const (
	dnsQR       = 1 << 15
	dnsRD       = 1 << 8
	dnsRA       = 1 << 7
	dnsNXDomain = 3
	dnsHeader   = 12
)

// ServeNXDomain answers every DNS query read from conn with NXDOMAIN (the
// name does not exist: libc then fails with EAI_NONAME at once, and
// clients do not retry as they do on a timeout) and calls report with the
// name asked for. It returns when conn is closed (nil) or fails.
func ServeNXDomain(conn net.PacketConn, report func(name string)) error {
	return ServeDNS(conn, nil, report)
}

// ServeDNS is [ServeNXDomain] but for the names lookup knows: their A query
// is answered with lookup's IPv4 address (TTL 5 s) and any other type with
// no records (NOERROR), so that libc uses the IPv4 address. report is
// called for the names lookup does not know.
func ServeDNS(conn net.PacketConn, lookup func(name string) (netip.Addr, bool), report func(name string)) error {
	buf := make([]byte, 512) // what a UDP query may be without EDNS
	for {
		n, from, err := conn.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		reply, name, ok := nxdomain(buf[:n])
		if !ok {
			continue
		}
		known := false
		if lookup != nil {
			if a, found := lookup(strings.ToLower(name)); found {
				known = true
				reply = answer(reply, a)
			}
		}
		_, _ = conn.WriteTo(reply, from)
		if !known && report != nil && name != "" {
			report(name)
		}
	}
}

// nxdomain builds the NXDOMAIN answer to the query q: its id, its question,
// no records. ok is false for what is not a query with one question.
func nxdomain(q []byte) (reply []byte, name string, ok bool) {
	if len(q) < dnsHeader {
		return nil, "", false
	}
	flags := binary.BigEndian.Uint16(q[2:])
	if flags&dnsQR != 0 || binary.BigEndian.Uint16(q[4:]) != 1 {
		return nil, "", false
	}
	name, end, ok := questionName(q, dnsHeader)
	if !ok || end+4 > len(q) {
		return nil, "", false
	}
	reply = make([]byte, end+4)
	copy(reply, q[:end+4])
	binary.BigEndian.PutUint16(reply[2:], dnsQR|flags&dnsRD|dnsRA|dnsNXDomain)
	binary.BigEndian.PutUint16(reply[4:], 1) // the question
	clear(reply[6:dnsHeader])                // no answer, authority, additional
	return reply, name, true
}

// Record types and class of the answers.
const (
	dnsTypeA   = 1
	dnsClassIN = 1
)

// answer turns the NXDOMAIN reply of nxdomain into a NOERROR one: with an
// A record of a when the question asks for A, else with no records.
func answer(reply []byte, a netip.Addr) []byte {
	flags := binary.BigEndian.Uint16(reply[2:]) &^ 0xf // RCODE 0
	binary.BigEndian.PutUint16(reply[2:], flags)
	qtype := binary.BigEndian.Uint16(reply[len(reply)-4:])
	if qtype != dnsTypeA || !a.Is4() {
		return reply
	}
	binary.BigEndian.PutUint16(reply[6:], 1) // one answer
	ip := a.As4()
	rr := []byte{0xc0, dnsHeader, 0, dnsTypeA, 0, dnsClassIN, 0, 0, 0, 5, 0, 4}
	return append(append(reply, rr...), ip[:]...)
}

// questionName reads the uncompressed name at off: its dotted form and
// where it ends.
func questionName(q []byte, off int) (string, int, bool) {
	var labels []string
	for off < len(q) {
		l := int(q[off])
		off++
		if l == 0 {
			return strings.Join(labels, "."), off, len(labels) > 0
		}
		if l > 63 || off+l > len(q) {
			return "", 0, false
		}
		labels = append(labels, string(q[off:off+l]))
		off += l
	}
	return "", 0, false
}
