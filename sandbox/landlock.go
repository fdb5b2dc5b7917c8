package sandbox

import (
	"errors"
	"fmt"
	"net/netip"
	"os"

	"github.com/sbx-sandbox/sbx/policy"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// FilePolicy is what the Landlock tier lets the program touch, applied by
// the shim to itself right before it starts the program; see
// [policy.Landlock], which compiles it.
type FilePolicy = policy.Landlock

// Policy is what s lets the program do, as the tiers' compilers take it:
// layout's directories are the system directories (see [HostLayout]).
func (s *Spec) Policy(layout []Entry) policy.Policy {
	p := policy.Policy{
		Files: policy.Files{
			ReadOnly:   s.ReadOnly,
			ReadWrite:  s.ReadWrite,
			Workspace:  s.Workspace,
			Write:      s.Write,
			Home:       s.Home,
			HomeInside: s.HomeInside,
			Devices:    []string{"/dev"},
			Masked:     s.Masked,
			Hidden:     hiddenPaths(s.Hidden),
			Protected:  s.Protected,
		},
		Limits: policy.Limits{MemoryBytes: s.Limits.MemoryBytes, CPUs: s.Limits.CPUs, Pids: s.Limits.Pids},
	}
	for _, b := range s.RunBinds {
		p.Files.RunState = append(p.Files.RunState, b.Source)
	}
	for _, e := range layout {
		if e.Dir {
			p.Files.System = append(p.Files.System, e.Path)
		}
	}
	switch {
	case s.HostNetwork:
		p.Network.Mode = policy.NetHost
	case s.Loopback:
		p.Network.Mode = policy.NetLoopback
	default:
		p.Network.Mode = policy.NetNone
	}
	if s.ProxyPort != 0 {
		p.Network.Proxy = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), s.ProxyPort)
	}
	return p
}

// hiddenPaths are the paths of hs.
func hiddenPaths(hs []Hidden) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.Path)
	}
	return out
}

// LandlockPolicy is the Landlock tier's file policy of s (see
// [policy.Policy.Landlock]), with the shim as its canary.
func (s *Spec) LandlockPolicy(layout []Entry) FilePolicy {
	return s.Policy(layout).Landlock(ShimPath)
}

// LandlockABI returns the Landlock ABI version of the running kernel, or an
// error saying why Landlock is unavailable.
func LandlockABI() (int, error) {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil {
		switch {
		case errors.Is(err, unix.ENOSYS):
			return 0, errors.New("landlock: not built into this kernel (CONFIG_SECURITY_LANDLOCK)")
		case errors.Is(err, unix.EOPNOTSUPP):
			return 0, errors.New("landlock: built in but not enabled (add landlock to the lsm= boot parameter)")
		}
		return 0, fmt.Errorf("landlock: %w", err)
	}
	return v, nil
}

// landlockRules turns the policy into go-landlock rules. Paths are split
// into directories and files because Landlock grants directory rights only
// on directories, which only the host (inside the sandbox) can tell.
func landlockRules(p FilePolicy) []landlock.Rule {
	var rules []landlock.Rule
	for _, path := range p.ListOnly {
		rules = append(rules, landlock.PathAccess(llsys.AccessFSReadDir, path))
	}
	for _, path := range p.ReadExec {
		if isDir(path) {
			rules = append(rules, landlock.RODirs(path))
		} else {
			rules = append(rules, landlock.ROFiles(path))
		}
	}
	for _, path := range p.ReadWrite {
		if isDir(path) {
			rules = append(rules, landlock.RWDirs(path).WithRefer())
		} else {
			rules = append(rules, landlock.RWFiles(path))
		}
	}
	for _, path := range p.Devices {
		rules = append(rules, landlock.RWDirs(path).WithIoctlDev())
	}
	if !p.AnyTCP { // TCP is not handled at all then: no rule may name it
		for _, port := range p.ConnectTCP {
			rules = append(rules, landlock.ConnectTCP(port))
		}
	}
	return rules
}

// applyLandlock restricts the calling process (all its threads) to p, denies
// TCP bind and connect (ABI 4+; unless p.AnyTCP) and scopes signals and abstract unix sockets
// to the sandbox (ABI 6+), then proves the file policy holds by failing to
// open the canary. Features newer than the kernel's ABI are left out; the
// file policy itself is never best effort.
func applyLandlock(p FilePolicy) error {
	abi, err := LandlockABI()
	if err != nil {
		return err
	}
	if abi < 1 {
		return errors.New("landlock: no usable ABI")
	}
	// BestEffort only downgrades to what the kernel's ABI knows; ABI >= 1
	// (checked above) keeps every file-access right of V1.
	cfg := landlock.V7
	if p.AnyTCP {
		cfg.HandledAccessNet = 0
	}
	cfg = cfg.BestEffort()
	if err := cfg.Restrict(landlockRules(p)...); err != nil {
		return fmt.Errorf("landlock: restrict: %w", err)
	}
	if p.Canary != "" {
		f, err := os.Open(p.Canary)
		if err == nil {
			f.Close()
			return fmt.Errorf("landlock: canary %s could still be opened: the file policy is not enforced", p.Canary)
		}
		if !errors.Is(err, unix.EACCES) {
			return fmt.Errorf("landlock: canary %s: unexpected %v (want EACCES)", p.Canary, err)
		}
	}
	return nil
}
