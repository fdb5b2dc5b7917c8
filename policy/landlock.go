package policy

// Landlock is what the Landlock tier gets: the rule set the shim applies to
// itself right before it starts the program (Landlock domains are inherited
// and cannot be left). Membership is by file hierarchy in the kernel, not
// by the path string of a syscall, so symlinks, bind mounts and
// /proc/*/root or /proc/*/fd links cannot alias a file outside the set.
// It travels to the shim as JSON.
type Landlock struct {
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

// Landlock compiles p for the Landlock tier, which runs inside the sandbox:
// the system directories and read-only mounts readable, the workspace
// writable only with Write, the home (inside), /tmp and read-write mounts
// writable, /dev usable, /proc readable and writable (its sensitive parts
// are read-only mounts), the root listable. canary is a file outside the set
// (the shim binary). TCP connects are limited to the proxy's port unless the
// namespace itself is the wall (loopback) or there is none (host).
func (p Policy) Landlock(canary string) Landlock {
	f := p.Files
	l := Landlock{
		Devices:  []string{"/dev"},
		ListOnly: []string{"/"},
		Canary:   canary,
	}
	l.ReadExec = append(l.ReadExec, f.System...)
	l.ReadExec = append(l.ReadExec, f.ReadOnly...)
	l.ReadWrite = append(l.ReadWrite, "/tmp", "/proc", f.HomeInside)
	if f.Write {
		l.ReadWrite = append(l.ReadWrite, f.Workspace)
	} else {
		l.ReadExec = append(l.ReadExec, f.Workspace)
	}
	l.ReadWrite = append(l.ReadWrite, f.ReadWrite...)
	if p.Network.Proxy.IsValid() {
		l.ConnectTCP = append(l.ConnectTCP, p.Network.Proxy.Port())
	}
	l.AnyTCP = p.Network.Mode == NetHost || p.Network.Mode == NetLoopback
	return l
}
