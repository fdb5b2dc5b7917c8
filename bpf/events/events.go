package events

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/canary"
)

// Op is the operation a program denied (enum sbx_op in sbx_event.h; a test
// checks these values against the generated ones).
type Op uint32

// Operations, as in enum sbx_op.
const (
	OpNone          Op = 0
	OpSocketCreate  Op = 1 // cgroup/sock_create: socket(2) of a denied family
	OpConnect4      Op = 2 // cgroup/connect4
	OpConnect6      Op = 3 // cgroup/connect6
	OpSendmsg4      Op = 4 // cgroup/sendmsg4 (UDP sendto/sendmsg with an address)
	OpSendmsg6      Op = 5 // cgroup/sendmsg6
	OpBind4         Op = 6 // cgroup/bind4
	OpBind6         Op = 7 // cgroup/bind6
	OpFileOpen      Op = 8
	OpPathLink      Op = 9
	OpPathRename    Op = 10
	OpFileIoctl     Op = 11
	OpPtrace        Op = 12
	OpTaskKill      Op = 13
	OpBPF           Op = 14
	OpSbMount       Op = 15
	OpInodeCreate   Op = 16
	OpSocketConnect Op = 17
	OpPathUnlink    Op = 18 // unlink or rmdir
	OpPathTruncate  Op = 19
	OpPathSetattr   Op = 20 // chmod or chown
)

var opNames = [...]string{
	OpNone:          "none",
	OpSocketCreate:  "socket",
	OpConnect4:      "connect",
	OpConnect6:      "connect",
	OpSendmsg4:      "sendmsg",
	OpSendmsg6:      "sendmsg",
	OpBind4:         "bind",
	OpBind6:         "bind",
	OpFileOpen:      "open",
	OpPathLink:      "link",
	OpPathRename:    "rename",
	OpFileIoctl:     "ioctl",
	OpPtrace:        "ptrace",
	OpTaskKill:      "kill",
	OpBPF:           "bpf",
	OpSbMount:       "mount",
	OpInodeCreate:   "create",
	OpSocketConnect: "connect",
	OpPathUnlink:    "unlink",
	OpPathTruncate:  "truncate",
	OpPathSetattr:   "setattr",
}

// String is the operation's name in messages ("connect" for both connect4
// and connect6).
func (o Op) String() string {
	if int(o) < len(opNames) && opNames[o] != "" {
		return opNames[o]
	}
	return fmt.Sprintf("op%d", uint32(o))
}

// IsNet reports whether o is one of the cgroup socket address operations
// (connect, sendmsg, bind).
func (o Op) IsNet() bool { return o >= OpConnect4 && o <= OpBind6 }

// hasAddr reports whether events of o carry an address (Event.Addr).
func (o Op) hasAddr() bool { return o.IsNet() || o == OpSocketConnect }

// Address families of the records (AF_UNIX, AF_INET, AF_INET6).
const (
	afUnix  = 1
	afInet  = 2
	afInet6 = 10
)

// Event is one decoded denial (struct sbx_event).
type Event struct {
	Time     time.Time     // when the program ran (converted from CLOCK_MONOTONIC)
	CgroupID uint64        // the run's cgroup id
	PID      uint32        // thread group id, as seen from the host
	Comm     string        // the denied task's comm
	Op       Op            // what was denied
	Errno    syscall.Errno // what the task got (EPERM for the net wall)
	Family   uint32        // socket family (AF_*), or 0
	SockType uint32        // socket type (SOCK_*), or 0
	Protocol uint32        // socket protocol (IPPROTO_*), or 0
	// Addr is the destination of a connect or sendmsg, the address of a
	// bind; the zero value for other operations, and for a family other
	// than AF_INET and AF_INET6.
	Addr  netip.AddrPort
	Flags uint32 // open flags, ioctl cmd, signal, ... (LSM operations)
	Path  string // the file of LSM operations, or ""
	// Syscall is set on the denial tracer's events (Op is [OpSyscall]):
	// the refused syscall. Path is then made absolute where it can be.
	Syscall *Syscall
	// Tier is the protection the tracer attributes the refusal to
	// ([TierSeccomp], ...); "" for the other programs' events.
	Tier string
}

// eventSize is the size of struct sbx_event.
var eventSize = binary.Size(eventsSbxEvent{})

// decodeHost decodes the first size bytes of raw (at least size long) into
// *v, a struct bpf2go generated (structs.HostLayout, explicit padding), of
// binary.Size size. When that is also its size in memory, no byte is
// skipped and the record is copied as it is: binary.Decode reflects over
// every element of the path arrays, ~12 us a record, most of what a flood
// of denials cost sbx.
func decodeHost[T any](raw []byte, v *T, size int) error {
	if uintptr(size) == unsafe.Sizeof(*v) {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(v)), size), raw[:size])
		return nil
	}
	_, err := binary.Decode(raw[:size], binary.NativeEndian, v)
	return err
}

// DecodeEvent decodes one ring buffer record (struct sbx_event, in host
// byte order). Trailing bytes (fields a newer program added) are ignored.
func DecodeEvent(raw []byte) (Event, error) {
	var r eventsSbxEvent
	if len(raw) < eventSize {
		return Event{}, fmt.Errorf("decode event: %d bytes, want %d", len(raw), eventSize)
	}
	if err := decodeHost(raw, &r, eventSize); err != nil {
		return Event{}, fmt.Errorf("decode event: %w", err)
	}
	if Op(r.Op) == OpSyscall {
		return DecodeTraceEvent(raw)
	}
	e := Event{
		Time:     monoToTime(r.TsNs),
		CgroupID: r.CgroupId,
		PID:      r.Pid,
		Comm:     cString(r.Comm[:]),
		Op:       Op(r.Op),
		Errno:    syscall.Errno(r.Err),
		Family:   r.Family,
		SockType: r.SockType,
		Protocol: r.Protocol,
		Flags:    r.Flags,
		Path:     cString(r.Path[:]),
	}
	if e.Op.hasAddr() {
		var a netip.Addr
		switch e.Family {
		case afInet:
			a = netip.AddrFrom4([4]byte(r.Addr[:4]))
		case afInet6:
			a = netip.AddrFrom16(r.Addr)
		}
		if a.IsValid() {
			e.Addr = netip.AddrPortFrom(a, r.Port)
		}
	}
	return e, nil
}

// monoToTime converts a CLOCK_MONOTONIC timestamp (bpf_ktime_get_ns) to
// wall-clock time.
func monoToTime(ns uint64) time.Time {
	var ts unix.Timespec
	now := time.Now()
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return now
	}
	return now.Add(-time.Duration(uint64(ts.Nano()) - ns))
}

func cString[T int8 | uint8](b []T) string {
	s := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		s = append(s, byte(c))
	}
	return string(s)
}

// Target is what the denied operation aimed at, as shown in messages and
// the "target" of violation records: an address for connect, sendmsg and
// bind, the family and type for socket, the path for file operations.
func (e Event) Target() string {
	switch {
	case e.Op == OpSyscall && e.Syscall != nil:
		return e.traceTarget()
	case e.Op == OpSocketCreate:
		return socketString(e.Family, e.SockType, e.Protocol)
	case e.Family == afUnix && e.Path != "":
		return e.Path // a unix socket of the host (lsm.c deny_unix_peer)
	case e.Addr.IsValid():
		return e.Addr.String()
	case e.Op.hasAddr():
		return name(familyNames, e.Family, "AF_")
	case e.Path != "":
		if e.Op == OpFileIoctl {
			return fmt.Sprintf("%s 0x%x", e.Path, e.Flags)
		}
		return e.Path
	case e.Op == OpFileIoctl:
		return fmt.Sprintf("0x%x", e.Flags)
	}
	return ""
}

// String formats the denial as sbx reports it, without the "sbx: " prefix:
// "denied connect 127.0.0.1:8080 (1234 curl)".
func (e Event) String() string {
	var b strings.Builder
	b.WriteString("denied ")
	b.WriteString(e.OpName())
	if t := e.Target(); t != "" {
		b.WriteByte(' ')
		b.WriteString(t)
	}
	fmt.Fprintf(&b, " (%d %s)", e.PID, e.Comm)
	return b.String()
}

var familyNames = map[uint32]string{
	1: "AF_UNIX", 2: "AF_INET", 10: "AF_INET6", 16: "AF_NETLINK", 17: "AF_PACKET",
	40: "AF_VSOCK", 44: "AF_XDP", 38: "AF_ALG", 3: "AF_AX25", 31: "AF_BLUETOOTH",
	29: "AF_CAN", 30: "AF_TIPC", 21: "AF_RDS", 46: "AF_MCTP",
}

var typeNames = map[uint32]string{
	1: "SOCK_STREAM", 2: "SOCK_DGRAM", 3: "SOCK_RAW", 4: "SOCK_RDM", 5: "SOCK_SEQPACKET",
	6: "SOCK_DCCP", 10: "SOCK_PACKET",
}

var protoNames = map[uint32]string{
	1: "IPPROTO_ICMP", 6: "IPPROTO_TCP", 17: "IPPROTO_UDP", 58: "IPPROTO_ICMPV6",
	132: "IPPROTO_SCTP", 136: "IPPROTO_UDPLITE", 255: "IPPROTO_RAW", 262: "IPPROTO_MPTCP",
}

func name(m map[uint32]string, v uint32, prefix string) string {
	if s, ok := m[v]; ok {
		return s
	}
	return fmt.Sprintf("%s%d", prefix, v)
}

// socketString is "AF_INET SOCK_STREAM IPPROTO_TCP" (protocol left out when
// 0).
func socketString(family, typ, proto uint32) string {
	var b bytes.Buffer
	b.WriteString(name(familyNames, family, "AF_"))
	b.WriteByte(' ')
	b.WriteString(name(typeNames, typ, "SOCK_"))
	if proto != 0 {
		b.WriteByte(' ')
		if family == afInet || family == afInet6 {
			b.WriteString(name(protoNames, proto, "IPPROTO_"))
		} else {
			fmt.Fprintf(&b, "proto %d", proto)
		}
	}
	return b.String()
}

// IsCanary reports whether e may be one of the canaries' own events (see
// package canary: its proofs run on a thread named [canary.Comm]).
func (e Event) IsCanary() bool {
	switch e.Op {
	case OpSocketCreate, OpConnect4, OpConnect6:
		return e.Comm == canary.Comm
	}
	return false
}
