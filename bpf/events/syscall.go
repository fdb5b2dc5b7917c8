package events

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"path"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// OpSyscall marks an event of the denial tracer (trace.c): a syscall of a
// sandboxed task that returned a refusal. [Event.Syscall] says which, and
// [Event.OpName] what it was doing. (Not in enum sbx_op, which net.c shares.)
const OpSyscall Op = 64

// Argument layouts of trace.c (enum sbx_trace_kind).
const (
	tkPlain    = eventsSbxTraceKindSBX_TK_PLAIN
	tkSocket   = eventsSbxTraceKindSBX_TK_SOCKET
	tkSockaddr = eventsSbxTraceKindSBX_TK_SOCKADDR
	tkMsghdr   = eventsSbxTraceKindSBX_TK_MSGHDR
	tkOpenHow  = eventsSbxTraceKindSBX_TK_OPENHOW
)

// traceClass groups the traced syscalls by what refuses them.
type traceClass uint8

const (
	classFile    traceClass = iota + 1 // Landlock (EACCES, EXDEV), read-only mounts (EROFS)
	classSocket                        // seccomp (families), Landlock (TCP, abstract unix)
	classSeccomp                       // seccomp's deny list (EPERM)
)

// traceSyscall is one row of the tracer's table: the name, the operation
// reported, and what trace.c reads of its arguments.
type traceSyscall struct {
	name  string
	op    string
	class traceClass
	sys   eventsSbxTraceSys
	// mode is the argument (1-based) holding a file mode in which seccomp
	// refuses the setuid and setgid bits (sandbox/seccomp.go), 0 for none:
	// an EPERM with either bit set (and, for an open, O_CREAT or
	// O_TMPFILE in its flags) is seccomp's.
	mode uint8
}

// File mode bits and open flags the seccomp filter looks at.
const (
	setIDBits   = unix.S_ISUID | unix.S_ISGID
	openCreates = unix.O_CREAT | unix.O_TMPFILE&^unix.O_DIRECTORY
)

// setIDRefused reports whether e is seccomp's refusal of a set-id mode.
func (t traceSyscall) setIDRefused(e Event) bool {
	if t.mode == 0 || e.Errno != unix.EPERM || e.Syscall == nil {
		return false
	}
	if e.Syscall.Args[(t.mode-1)%6]&setIDBits == 0 {
		return false
	}
	if t.op == "open" && t.name != "creat" {
		return t.sys.Flags != 0 && e.Syscall.Args[(t.sys.Flags-1)%6]&openCreates != 0
	}
	return true
}

// Tiers the tracer attributes denials to (the "tier" of violation records).
const (
	TierSeccomp    = "seccomp"    // the seccomp filter's EPERM
	TierLandlock   = "landlock"   // Landlock's EACCES / EXDEV (or EPERM for scoped unix sockets)
	TierMount      = "mount"      // a read-only mount's EROFS
	TierCapability = "capability" // a capability the sandbox lacks (raw sockets)
	TierKernel     = "kernel"     // another refusal of the kernel
)

// Syscall is what the tracer knows of a refused syscall.
type Syscall struct {
	Nr   uint32    // x86_64 syscall number
	Name string    // "openat"
	Args [6]uint64 // the raw arguments
	// Path2 is the second path of link, rename: made absolute, like
	// Event.Path, when it was relative and its directory known.
	Path2 string
}

// traceEventSize is the size of struct sbx_trace_event.
var traceEventSize = binary.Size(eventsSbxTraceEvent{})

// DecodeTraceEvent decodes one record of the tracer (struct
// sbx_trace_event, in host byte order). Trailing bytes are ignored.
func DecodeTraceEvent(raw []byte) (Event, error) {
	var r eventsSbxTraceEvent
	if len(raw) < traceEventSize {
		return Event{}, fmt.Errorf("decode trace event: %d bytes, want %d", len(raw), traceEventSize)
	}
	if err := decodeHost(raw, &r, traceEventSize); err != nil {
		return Event{}, fmt.Errorf("decode trace event: %w", err)
	}
	if Op(r.Ev.Op) != OpSyscall {
		return Event{}, fmt.Errorf("decode trace event: op %d, want %d", r.Ev.Op, OpSyscall)
	}
	t, ok := traceSyscalls[r.Nr]
	if !ok {
		return Event{}, fmt.Errorf("decode trace event: syscall %d is not traced", r.Nr)
	}
	e := Event{
		Time:     monoToTime(r.Ev.TsNs),
		CgroupID: r.Ev.CgroupId,
		PID:      r.Ev.Pid,
		Comm:     cString(r.Ev.Comm[:]),
		Op:       OpSyscall,
		Errno:    syscall.Errno(r.Ev.Err),
		Family:   r.Ev.Family,
		SockType: r.Ev.SockType,
		Protocol: r.Ev.Protocol,
		Flags:    r.Ev.Flags,
		Syscall:  &Syscall{Nr: r.Nr, Name: t.name, Args: r.Args},
	}
	switch eventsSbxTraceKind(t.sys.Kind) {
	case tkSockaddr, tkMsghdr:
		var a netip.Addr
		switch e.Family {
		case afInet:
			a = netip.AddrFrom4([4]byte(r.Ev.Addr[:4]))
		case afInet6:
			a = netip.AddrFrom16(r.Ev.Addr)
		case afUnix:
			e.Path = cString(r.Ev.Path[:])
			if e.Flags&1 != 0 {
				e.Path = "@" + e.Path
			}
		}
		if a.IsValid() {
			e.Addr = netip.AddrPortFrom(a, r.Ev.Port)
		}
	default:
		e.Path = resolve(cString(r.Base[:]), cString(r.Ev.Path[:]))
		e.Syscall.Path2 = resolve(cString(r.Base2[:]), cString(r.Path2[:]))
	}
	e.Tier = traceTier(t, e)
	return e, nil
}

// resolve makes p absolute against dir, the directory trace.c found for
// it ("" if p was absolute or the directory unknown: p is kept as given).
func resolve(dir, p string) string {
	if p == "" || strings.HasPrefix(p, "/") || !strings.HasPrefix(dir, "/") {
		return p
	}
	return path.Join(dir, p)
}

// traceTier says which protection refused a traced syscall.
func traceTier(t traceSyscall, e Event) string {
	switch {
	case e.Errno == unix.EROFS:
		return TierMount
	case t.setIDRefused(e):
		return TierSeccomp
	case t.class == classSeccomp:
		return TierSeccomp
	case t.class == classSocket && t.name == "socket" && e.Errno == unix.EPERM:
		if e.Family == afInet || e.Family == afInet6 {
			// trace.c reports only raw ones: CAP_NET_RAW is checked
			// before the network wall runs.
			return TierCapability
		}
		return TierSeccomp
	case t.class == classSocket, t.class == classFile && (e.Errno == unix.EACCES || e.Errno == unix.EXDEV):
		return TierLandlock
	}
	return TierKernel
}

// OpName is the operation's name in messages: Op's, or for the tracer's
// events what the syscall did ("open", "link", ...; "syscall" for seccomp's
// deny list, whose Target is the syscall's name).
func (e Event) OpName() string {
	if e.Op != OpSyscall || e.Syscall == nil {
		return e.Op.String()
	}
	t, ok := traceSyscalls[e.Syscall.Nr]
	if !ok {
		return "syscall"
	}
	if t.name == "unlinkat" && e.Flags&unix.AT_REMOVEDIR != 0 {
		return "rmdir"
	}
	return t.op
}

// traceTarget is Target for the tracer's events.
func (e Event) traceTarget() string {
	t, ok := traceSyscalls[e.Syscall.Nr]
	switch {
	case !ok:
		return e.Syscall.Name
	case t.class == classSeccomp:
		if t.sys.Flags != 0 {
			return fmt.Sprintf("%s 0x%x", t.name, e.Syscall.Args[(t.sys.Flags-1)%6])
		}
		return t.name
	case t.name == "socket":
		return socketString(e.Family, e.SockType, e.Protocol)
	case t.class == classSocket:
		switch {
		case e.Addr.IsValid():
			return e.Addr.String()
		case e.Path != "":
			return e.Path
		case e.Family == 0:
			return "(no address)"
		}
		return name(familyNames, e.Family, "AF_")
	case e.Syscall.Path2 != "":
		return e.Path + " -> " + e.Syscall.Path2
	case t.setIDRefused(e):
		p := e.Path
		if t.sys.Path == 0 { // fchmod
			p = fmt.Sprintf("fd %d", int32(e.Syscall.Args[0]))
		}
		return fmt.Sprintf("%s mode %#o", p, e.Syscall.Args[(t.mode-1)%6]&0o7777)
	}
	return e.Path
}

// IsWrite reports whether the tracer's event is a refused change of a file
// (an open for writing or creating, or a change of a directory), for the
// runner's hint that the workspace is read-only.
func (e Event) IsWrite() bool {
	if e.Op != OpSyscall || e.Syscall == nil {
		return false
	}
	t := traceSyscalls[e.Syscall.Nr]
	if t.class != classFile {
		return false
	}
	switch t.op {
	case "exec":
		return false
	case "open":
		if t.name == "creat" {
			return true
		}
		return e.Flags&(unix.O_WRONLY|unix.O_RDWR|unix.O_CREAT|unix.O_TRUNC) != 0
	}
	return true
}

// TracesSeccomp reports whether the tracer reports a refusal of the named
// syscall by seccomp (its EPERM), so that tests can hold the deny list and
// the tracer's table together. Names the x86_64 ABI lacks are in
// [SeccompAbsent].
func TracesSeccomp(name string) bool {
	for _, t := range traceSyscalls {
		if t.name == name && t.sys.Errs&bitEPERM != 0 {
			return true
		}
	}
	return false
}

// TracedSyscall is one row of the tracer's syscall table.
type TracedSyscall struct {
	Name string // "openat"
	// Sys is what trace.c reads of the syscall (struct sbx_trace_sys): the
	// value its table map holds for the syscall's number.
	Sys any
}

// TracedSyscalls returns the syscalls the tracer watches, by x86_64
// number, with what trace.c reads of each; empty on other architectures
// (the tracer decodes the x86_64 ABI only). The decoder reads the records
// by the same table.
func TracedSyscalls() map[uint32]TracedSyscall {
	m := make(map[uint32]TracedSyscall, len(traceSyscalls))
	for nr, s := range traceSyscalls {
		m[nr] = TracedSyscall{Name: s.name, Sys: s.sys}
	}
	return m
}
