package sandbox

import (
	"errors"
	"fmt"
	"os"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// FilePolicy is what the Landlock tier lets the program touch, applied by
// the shim to itself right before it starts the program (Landlock domains
// are inherited and cannot be left). Membership is by file hierarchy in the
// kernel, not by the path string of a syscall, so symlinks, bind mounts and
// /proc/*/root or /proc/*/fd links cannot alias a file outside the set.
type FilePolicy struct {
	// ReadExec are directories (or files) that may be read and executed.
	ReadExec []string `json:"readExec,omitempty"`
	// ReadWrite are directories (or files) that may also be written,
	// created in, renamed within and linked within.
	ReadWrite []string `json:"readWrite,omitempty"`
	// Devices are directories of device nodes: read, write and ioctl.
	Devices []string `json:"devices,omitempty"`
	// ListOnly are directories that may only be listed (readdir), not
	// read below: the sandbox root, so that "ls /" works.
	ListOnly []string `json:"listOnly,omitempty"`
	// Canary is a file that exists but lies outside the set: the shim
	// proves the policy is enforced by failing to open it.
	Canary string `json:"canary,omitempty"`
	// ConnectTCP are the TCP ports the program may connect to (ABI 4+;
	// Landlock matches ports only, the network wall the address).
	ConnectTCP []uint16 `json:"connectTCP,omitempty"`
	// AnyTCP leaves TCP bind and connect unrestricted: the run shares the
	// host's network, or its own namespace holds nothing but loopback
	// (the namespace is the wall).
	AnyTCP bool `json:"anyTCP,omitempty"`
}

// LandlockPolicy builds the file policy of s: the system directories and
// read-only mounts readable, the workspace writable only with Write, the
// home, /tmp and read-write mounts writable, /dev usable, /proc readable and
// writable (its sensitive parts are read-only mounts).
func (s *Spec) LandlockPolicy(layout []Entry) FilePolicy {
	p := FilePolicy{
		Devices:  []string{"/dev"},
		ListOnly: []string{"/"},
		Canary:   ShimPath,
	}
	for _, e := range layout {
		if e.Dir {
			p.ReadExec = append(p.ReadExec, e.Path)
		}
	}
	p.ReadExec = append(p.ReadExec, s.ReadOnly...)
	p.ReadWrite = append(p.ReadWrite, "/tmp", "/proc", s.HomeInside)
	if s.Write {
		p.ReadWrite = append(p.ReadWrite, s.Workspace)
	} else {
		p.ReadExec = append(p.ReadExec, s.Workspace)
	}
	p.ReadWrite = append(p.ReadWrite, s.ReadWrite...)
	if s.ProxyPort != 0 {
		p.ConnectTCP = append(p.ConnectTCP, s.ProxyPort)
	}
	p.AnyTCP = s.HostNetwork || s.Loopback
	return p
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

// rules compiles the policy into go-landlock rules. Paths are split into
// directories and files because Landlock grants directory rights only on
// directories.
func (p FilePolicy) rules() []landlock.Rule {
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
	if err := cfg.Restrict(p.rules()...); err != nil {
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
