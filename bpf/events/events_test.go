package events

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/sbx-sandbox/sbx/bpf"
	"github.com/sbx-sandbox/sbx/bpf/internal/bpftest"
)

// TestOpConstants: the Go Op constants are enum sbx_op, value for value,
// and none is missing (read from the BTF of the compiled object).
func TestOpConstants(t *testing.T) {
	goOps := map[string]Op{
		"SBX_OP_NONE": OpNone, "SBX_OP_SOCKET_CREATE": OpSocketCreate,
		"SBX_OP_CONNECT4": OpConnect4, "SBX_OP_CONNECT6": OpConnect6,
		"SBX_OP_SENDMSG4": OpSendmsg4, "SBX_OP_SENDMSG6": OpSendmsg6,
		"SBX_OP_BIND4": OpBind4, "SBX_OP_BIND6": OpBind6,
		"SBX_OP_FILE_OPEN": OpFileOpen, "SBX_OP_PATH_LINK": OpPathLink,
		"SBX_OP_PATH_RENAME": OpPathRename, "SBX_OP_FILE_IOCTL": OpFileIoctl,
		"SBX_OP_PTRACE": OpPtrace, "SBX_OP_TASK_KILL": OpTaskKill,
		"SBX_OP_BPF": OpBPF, "SBX_OP_SB_MOUNT": OpSbMount,
		"SBX_OP_INODE_CREATE": OpInodeCreate, "SBX_OP_SOCKET_CONNECT": OpSocketConnect,
		"SBX_OP_PATH_UNLINK": OpPathUnlink, "SBX_OP_PATH_TRUNCATE": OpPathTruncate,
		"SBX_OP_PATH_SETATTR": OpPathSetattr,
	}
	spec, err := loadEvents()
	if err != nil {
		t.Fatal(err)
	}
	var enum *btf.Enum
	if err := spec.Types.TypeByName("sbx_op", &enum); err != nil {
		t.Fatal(err)
	}
	for _, v := range enum.Values {
		op, ok := goOps[v.Name]
		if !ok {
			t.Errorf("%s = %d has no Go Op constant", v.Name, v.Value)
			continue
		}
		if uint64(op) != v.Value {
			t.Errorf("%s = %d, Go constant is %d", v.Name, v.Value, op)
		}
		if op.String() == fmt.Sprintf("op%d", v.Value) {
			t.Errorf("%s has no name", v.Name)
		}
		delete(goOps, v.Name)
	}
	for name := range goOps {
		t.Errorf("Go constant for %s, which enum sbx_op lacks", name)
	}
	if OpConnect4 != Op(eventsSbxOpSBX_OP_CONNECT4) || OpSocketConnect != Op(eventsSbxOpSBX_OP_SOCKET_CONNECT) {
		t.Error("Go constants differ from the generated ones")
	}
}

// TestSpec: the ring pool is what the reader expects, and struct
// sbx_event keeps its size.
func TestSpec(t *testing.T) {
	spec, err := loadEvents()
	if err != nil {
		t.Fatal(err)
	}
	inner := spec.Maps[eventsMapSbxEvents].InnerMap
	if inner == nil || inner.Type != ebpf.RingBuf || inner.MaxEntries != ringSize {
		t.Errorf("inner map of sbx_events %+v: want a %d-byte ring buffer", inner, ringSize)
	}
	if got := binary.Size(eventsSbxEvent{}); got != 336 {
		t.Errorf("struct sbx_event is %d bytes, want 336 (changed? keep it compatible)", got)
	}
}

func encodeEvent(t testing.TB, r eventsSbxEvent) []byte {
	b, err := binary.Append(nil, binary.NativeEndian, r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func cbytes[T int8 | uint8](dst []T, s string) {
	for i := 0; i < len(s) && i < len(dst)-1; i++ {
		dst[i] = T(s[i])
	}
}

func TestEventString(t *testing.T) {
	v6 := netip.MustParseAddr("2001:db8::1").As16()
	for _, tc := range []struct {
		name string
		ev   func(*eventsSbxEvent)
		want string
	}{
		{"connect4", func(e *eventsSbxEvent) {
			e.Op, e.Family, e.Port = uint32(OpConnect4), afInet, 8080
			copy(e.Addr[:], []byte{127, 0, 0, 1})
		}, "denied connect 127.0.0.1:8080 (1234 curl)"},
		{"connect6", func(e *eventsSbxEvent) {
			e.Op, e.Family, e.Port, e.Addr = uint32(OpConnect6), afInet6, 443, v6
		}, "denied connect [2001:db8::1]:443 (1234 curl)"},
		{"sendmsg6", func(e *eventsSbxEvent) {
			e.Op, e.Family, e.Port, e.Addr = uint32(OpSendmsg6), afInet6, 53, v6
		}, "denied sendmsg [2001:db8::1]:53 (1234 curl)"},
		{"bind4", func(e *eventsSbxEvent) {
			e.Op, e.Family = uint32(OpBind4), afInet
		}, "denied bind 0.0.0.0:0 (1234 curl)"},
		{"socket", func(e *eventsSbxEvent) {
			e.Op, e.Family, e.SockType, e.Protocol = uint32(OpSocketCreate), afInet, 1, 6
		}, "denied socket AF_INET SOCK_STREAM IPPROTO_TCP (1234 curl)"},
		{"socket unknown", func(e *eventsSbxEvent) {
			e.Op, e.Family, e.SockType, e.Protocol = uint32(OpSocketCreate), 99, 7, 3
		}, "denied socket AF_99 SOCK_7 proto 3 (1234 curl)"},
		{"open", func(e *eventsSbxEvent) {
			e.Op = uint32(OpFileOpen)
			cbytes(e.Path[:], "/etc/shadow")
		}, "denied open /etc/shadow (1234 curl)"},
		{"ioctl", func(e *eventsSbxEvent) {
			e.Op, e.Flags = uint32(OpFileIoctl), 0x5412
			cbytes(e.Path[:], "/dev/pts/0")
		}, "denied ioctl /dev/pts/0 0x5412 (1234 curl)"},
		{"unknown op", func(e *eventsSbxEvent) { e.Op = 99 }, "denied op99 (1234 curl)"},
		{"lsm connect", func(e *eventsSbxEvent) {
			e.Op, e.Family, e.Port = uint32(OpSocketConnect), afInet, 22
			copy(e.Addr[:], []byte{10, 0, 0, 1})
		}, "denied connect 10.0.0.1:22 (1234 curl)"},
		{"connect unix family", func(e *eventsSbxEvent) {
			e.Op, e.Family = uint32(OpSocketConnect), afUnix
		}, "denied connect AF_UNIX (1234 curl)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := eventsSbxEvent{Pid: 1234, Err: 1}
			cbytes(r.Comm[:], "curl")
			tc.ev(&r)
			e, err := DecodeEvent(encodeEvent(t, r))
			if err != nil {
				t.Fatal(err)
			}
			if got := e.String(); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDecodeEvent(t *testing.T) {
	if _, err := DecodeEvent(make([]byte, eventSize-1)); err == nil {
		t.Error("short record: no error")
	}
	r := eventsSbxEvent{CgroupId: 7, Pid: 42, Op: uint32(OpConnect6), Err: 1, Family: afInet6, Port: 1}
	cbytes(r.Comm[:], "0123456789abcdefXX") // fills all 15 chars
	raw := append(encodeEvent(t, r), 1, 2, 3, 4, 5, 6, 7, 8)
	e, err := DecodeEvent(raw)
	if err != nil {
		t.Fatal(err)
	}
	if e.CgroupID != 7 || e.PID != 42 || e.Errno != syscall.EPERM || e.Comm != "0123456789abcde" || e.Addr != netip.MustParseAddrPort("[::]:1") {
		t.Errorf("decoded %+v", e)
	}
}

func FuzzDecodeEvent(f *testing.F) {
	f.Add(encodeEvent(f, eventsSbxEvent{Op: uint32(OpConnect4), Family: afInet, Port: 80}))
	f.Add(encodeEvent(f, eventsSbxEvent{Op: uint32(OpSocketCreate), Family: 17, SockType: 3}))
	f.Add(make([]byte, 10))
	f.Fuzz(func(t *testing.T, raw []byte) {
		e, err := DecodeEvent(raw)
		if err != nil {
			return
		}
		if s := e.String(); !strings.HasPrefix(s, "denied ") {
			t.Errorf("String() = %q", s)
		}
		if e.Addr.IsValid() && !e.Op.hasAddr() {
			t.Errorf("address on a %v event", e.Op)
		}
	})
}

// smallEventMaps creates the maps of events.h with a pool of n rings.
func smallEventMaps(t *testing.T, n uint32, slotDir string) Maps {
	t.Helper()
	spec, err := loadEvents()
	if err != nil {
		t.Fatal(err)
	}
	newMap := func(name string, max uint32) *ebpf.Map {
		ms := spec.Maps[name].Copy()
		if max > 0 {
			ms.MaxEntries = max
		}
		m, err := ebpf.NewMap(ms)
		if errors.Is(err, bpf.ErrNotSupported) {
			t.Skipf("kernel lacks %s maps: %v", ms.Type, err)
		}
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	return Maps{
		Events:   newMap(eventsMapSbxEvents, n),
		Drops:    newMap(eventsMapSbxDrops, 0),
		Unrouted: newMap(eventsMapSbxUnrouted, 0),
		SlotDir:  slotDir,
	}
}

func TestEventPoolFull(t *testing.T) {
	bpftest.RequireRoot(t)
	for _, tc := range []struct {
		name    string
		slotDir func() string
	}{
		{"private", func() string { return "" }},
		{"pinned", func() string {
			d := bpftest.PinRoot(t)
			if err := os.Mkdir(d, 0o700); err != nil {
				t.Fatal(err)
			}
			return d
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			maps := smallEventMaps(t, 2, tc.slotDir())
			a, err := NewReader(maps, 1)
			if err != nil {
				t.Fatal(err)
			}
			b, err := NewReader(maps, 2)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if _, err := NewReader(maps, 3); !errors.Is(err, ErrNoFreeRing) {
				t.Fatalf("third reader on a pool of 2: %v, want ErrNoFreeRing", err)
			}
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			// Read after Close says so, as documented (it panicked).
			if _, err := a.Read(); !errors.Is(err, os.ErrClosed) {
				t.Errorf("Read after Close: %v, want os.ErrClosed", err)
			}
			if err := a.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			c, err := NewReader(maps, 3)
			if err != nil {
				t.Fatalf("after a Close: %v", err)
			}
			c.Close()
		})
	}
}
