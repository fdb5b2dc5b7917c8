package report

import "time"

// TierMask is the tier of a denial of a masked path in --violations (the
// mount level's mode 0000; the BPF LSM tier reports its own refusals).
const TierMask = "mask"

// MaxKept is the most violations kept for sbx exec's result (its
// gate.MaxViolations); the rest are counted as dropped.
const MaxKept = 256

// Violation is one operation a sandbox tier denied. sbx exec's result
// carries the same fields (gate.Violation, its wire type, converts from it).
type Violation struct {
	// Time is when the tier saw the operation.
	Time time.Time `json:"time"`
	// Pid is the process id the tier reported.
	Pid int `json:"pid"`
	// Comm is the process's command name (at most 16 bytes in the kernel).
	Comm string `json:"comm"`
	// Op is the operation, e.g. "open", "connect", "socket", "bind".
	Op string `json:"op"`
	// Target is what the operation was aimed at: a path, an address:port.
	Target string `json:"target"`
	// Errno is the error the operation got, by name, e.g. "EACCES".
	Errno string `json:"errno"`
	// Tier is the layer that denied it, e.g. "bpf", "seccomp", "landlock",
	// "proxy".
	Tier string `json:"tier"`
	// Reason says why, when the tier gives one (the egress proxy: "not
	// allowed", "resolves to loopback address 127.0.0.1").
	Reason string `json:"reason,omitempty"`
}
