//go:build !amd64

package events

// The tracer decodes the x86_64 syscall ABI only (trace.c reads its
// pt_regs); elsewhere it has nothing to watch and tracer.Open fails with
// ErrNotSupported.
var (
	traceSyscalls = map[uint32]traceSyscall{}
	seccompDenied = map[uint32]string{}
	// SeccompAbsent: see the amd64 file.
	SeccompAbsent []string
)
