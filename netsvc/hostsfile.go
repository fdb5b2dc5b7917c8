package netsvc

import (
	"bufio"
	"context"
	"fmt"
	"net/netip"
	"os"
	"strings"
)

// hostsResolver answers from a hosts-style file ("ADDRESS NAME..." lines,
// # comments), read on every lookup; a name it lacks does not exist. Test
// builds give it to the egress proxy (testResolver) so that tests never
// ask real DNS.
type hostsResolver string

// LookupNetIP returns the addresses of host of the network's family ("ip",
// "ip4" or "ip6"), in file order.
func (h hostsResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	f, err := os.Open(string(h))
	if err != nil {
		return nil, fmt.Errorf("lookup %s: %w", host, err)
	}
	defer f.Close()
	var out []netip.Addr
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		a, err := netip.ParseAddr(fields[0])
		if err != nil {
			continue
		}
		if network == "ip4" && !a.Is4() || network == "ip6" && !a.Is6() {
			continue
		}
		for _, name := range fields[1:] {
			if strings.EqualFold(strings.TrimSuffix(name, "."), strings.TrimSuffix(host, ".")) {
				out = append(out, a)
				break
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("lookup %s: read %s: %w", host, string(h), err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("lookup %s: no such host (in %s)", host, string(h))
	}
	return out, nil
}
