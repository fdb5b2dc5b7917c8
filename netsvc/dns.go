package netsvc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/sbx-sandbox/sbx/egress"
	"github.com/sbx-sandbox/sbx/hostfs"
	"github.com/sbx-sandbox/sbx/internal/safetext"
	"github.com/sbx-sandbox/sbx/report"
	"github.com/sbx-sandbox/sbx/sandbox"
)

// dnsAddr is where sbx answers DNS in a --net loopback sandbox (the
// nameserver of egress.ResolvConf). Port 53 is below the sandbox's
// unprivileged port range, so the program cannot take it first.
const dnsAddr = "127.0.0.1:53"

// resolvConf returns the host file sbx binds over the sandbox's
// /etc/resolv.conf (egress.ResolvConf), kept in the state dir and written
// when it is missing or differs.
func ResolvConf(stateDir string) (string, error) {
	path := filepath.Join(stateDir, "resolv.conf")
	if data, err := os.ReadFile(path); err == nil && bytes.Equal(data, []byte(egress.ResolvConf)) {
		return path, nil
	}
	if err := writeResolvConf(stateDir); err != nil {
		return "", fmt.Errorf("write resolv.conf for the sandbox: %w", err)
	}
	return path, nil
}

// writeResolvConf writes egress.ResolvConf to stateDir/resolv.conf through
// a temporary file and a rename, never following a symlink.
func writeResolvConf(stateDir string) error {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return err
	}
	dir, err := hostfs.OpenDir(stateDir, nil)
	if err != nil {
		return err
	}
	defer dir.Close()
	tmp := "resolv.conf.tmp-" + strconv.Itoa(os.Getpid())
	f, err := dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(egress.ResolvConf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = dir.Rename(tmp, "resolv.conf")
	}
	if err != nil {
		_ = dir.Remove(tmp)
	}
	return err
}

// dnsServer answers the sandbox's queries from sbx's process: the allowed
// names with their forwarders' addresses, the sandbox's hostname with
// 127.0.0.1, every other name with NXDOMAIN, reported as a denial (with
// the hint its dnsRefusal gives).
type dnsServer struct {
	close  func() error
	served chan error
}

// dnsRefusal says why the DNS answerer refused a name and what to do
// about it; the reason and hint (a whole line, or "") of its denial.
type dnsRefusal func(name string) (reason, hint string)

// noNames is the refusal of a run without --allow-host: it has no DNS.
func noNames(name string) (string, string) {
	n := safetext.Escape(name)
	return "no DNS in the sandbox", fmt.Sprintf("sbx: the sandbox has no DNS; to let the program reach %s, run sbx with --allow-host %s[:PORT]\n", n, n)
}

// startDNS listens on dnsAddr in the sandbox's network namespace and
// serves it until stop: known gives the addresses of the names it answers,
// why says why the others are refused.
func startDNS(ns *egress.Netns, rep *report.Reporter, lookup func(string) (netip.Addr, bool), why dnsRefusal) (*dnsServer, error) {
	pc, err := ns.ListenPacket(dnsAddr)
	if err != nil {
		return nil, fmt.Errorf("sandbox DNS: %w", err)
	}
	d := &dnsServer{close: pc.Close, served: make(chan error, 1)}
	known := func(name string) (netip.Addr, bool) {
		// The sandbox's own hostname is its loopback, as nss-myhostname
		// answers on the host: curl --version and others look it up, a
		// routine probe that must neither fail nor be reported.
		if name == sandbox.Hostname {
			return netip.AddrFrom4([4]byte{127, 0, 0, 1}), true
		}
		if lookup != nil {
			return lookup(name)
		}
		return netip.Addr{}, false
	}
	go func() {
		d.served <- egress.ServeDNS(pc, known, func(name string) {
			reason, hint := why(name)
			rep.AddHinted(report.Violation{
				Time: time.Now(), Op: "resolve", Target: name,
				Errno: "NXDOMAIN", Tier: "dns", Reason: reason,
			}, hint)
		})
	}()
	return d, nil
}

// stop ends the server.
func (d *dnsServer) stop(log io.Writer) {
	_ = d.close()
	if err := <-d.served; err != nil && !errors.Is(err, os.ErrClosed) {
		fmt.Fprintf(log, "sbx: warning: sandbox DNS: %v\n", err)
	}
}
