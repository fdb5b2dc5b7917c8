package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"
)

// TestNetEvents: each denial reaches the run's own ring, decoded with the
// right op, socket, address, pid and cgroup; other runs' denials do not.
func TestNetEvents(t *testing.T) {
	env := newNetEnv(t)
	r, err := env.net.Events(env.runID)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := env.net.Events(env.runID); err == nil {
		t.Error("second reader for the same run: no error")
	}

	tcp4 := listenTCP(t, "tcp4", "127.0.0.1:0").Addr().(*net.TCPAddr).AddrPort()
	udp4 := listenUDP(t, "udp4", "127.0.0.1:0").LocalAddr().(*net.UDPAddr).AddrPort()
	any4 := netip.MustParseAddrPort("127.0.0.1:0")
	for _, tc := range []struct {
		name   string
		files  []*os.File
		args   []string
		op     Op
		family uint32
		typ    uint32
		proto  uint32
		addr   netip.AddrPort
		str    string // String() with %d for the pid
	}{
		{"socket", nil, []string{"socket", itoa(unix.AF_INET6), itoa(unix.SOCK_DGRAM), "0"},
			OpSocketCreate, unix.AF_INET6, unix.SOCK_DGRAM, unix.IPPROTO_UDP, netip.AddrPort{},
			"denied socket AF_INET6 SOCK_DGRAM IPPROTO_UDP (%d bpf.test)"},
		{"raw socket", nil, []string{"socket", itoa(unix.AF_INET), itoa(unix.SOCK_RAW), itoa(unix.IPPROTO_ICMP)},
			OpSocketCreate, unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP, netip.AddrPort{},
			"denied socket AF_INET SOCK_RAW IPPROTO_ICMP (%d bpf.test)"},
		{"connect", []*os.File{hostSocket(t, unix.AF_INET, unix.SOCK_STREAM)}, []string{"connect", "3", tcp4.String()},
			OpConnect4, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_TCP, tcp4,
			"denied connect " + tcp4.String() + " (%d bpf.test)"},
		{"sendto", []*os.File{hostSocket(t, unix.AF_INET, unix.SOCK_DGRAM)}, []string{"sendto", "3", udp4.String()},
			OpSendmsg4, unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_UDP, udp4,
			"denied sendmsg " + udp4.String() + " (%d bpf.test)"},
		{"bind", []*os.File{hostSocket(t, unix.AF_INET, unix.SOCK_STREAM)}, []string{"bind", "3", any4.String()},
			OpBind4, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_TCP, any4,
			"denied bind 127.0.0.1:0 (%d bpf.test)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The same operation outside the sandbox is allowed and
			// reported nowhere.
			if tc.op == OpSocketCreate {
				if out, _ := helper(t, "", nil, tc.args...); out != "ok" {
					t.Fatalf("outside: got %s, want ok", out)
				}
			}
			in, pid := helper(t, env.run, tc.files, tc.args...)
			if in != "EPERM" {
				t.Fatalf("inside: got %s, want EPERM", in)
			}
			e := readEvent(t, r)
			if e.Op != tc.op || e.Family != tc.family || e.SockType != tc.typ || e.Protocol != tc.proto || e.Addr != tc.addr {
				t.Errorf("event %+v: want op %v family %d type %d proto %d addr %v", e, tc.op, tc.family, tc.typ, tc.proto, tc.addr)
			}
			if int(e.PID) != pid || e.CgroupID != env.runID || e.Errno != syscall.EPERM || e.Comm != "bpf.test" {
				t.Errorf("event %+v: want pid %d cgroup %d EPERM comm bpf.test", e, pid, env.runID)
			}
			if d := time.Since(e.Time); d < 0 || d > 5*time.Second {
				t.Errorf("event time %v is %v from now", e.Time, d)
			}
			if got, want := e.String(), fmt.Sprintf(tc.str, pid); got != want {
				t.Errorf("String() = %q, want %q", got, want)
			}
		})
	}

	// A second run's denials go to its own reader only.
	run2 := newCgroupDir(t, filepath.Join(env.parent, "run2"))
	id2, err := CgroupID(run2)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := env.net.Events(id2)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if in, _ := helper(t, run2, nil, "socket", itoa(unix.AF_INET), itoa(unix.SOCK_STREAM), "0"); in != "EPERM" {
		t.Fatalf("run2: got %s, want EPERM", in)
	}
	if e := readEvent(t, r2); e.CgroupID != id2 || e.Op != OpSocketCreate {
		t.Errorf("run2 event %+v: want socket of cgroup %d", e, id2)
	}
	r.SetDeadline(time.Now().Add(50 * time.Millisecond))
	if e, err := r.Read(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("run1 reader got %v, %v: want nothing (os.ErrDeadlineExceeded)", e, err)
	}

	// A run without a reader is still denied; its events are counted.
	run3 := newCgroupDir(t, filepath.Join(env.parent, "run3"))
	before, err := Unrouted(env.net.EventMaps())
	if err != nil {
		t.Fatal(err)
	}
	if in, _ := helper(t, run3, nil, "socket", itoa(unix.AF_INET), itoa(unix.SOCK_STREAM), "0"); in != "EPERM" {
		t.Fatalf("run3: got %s, want EPERM", in)
	}
	if after, err := Unrouted(env.net.EventMaps()); err != nil || after != before+1 {
		t.Errorf("unrouted: %d -> %d (%v), want +1", before, after, err)
	}
	if n, err := r.Dropped(); err != nil || n != 0 {
		t.Errorf("dropped: %d, %v; want 0", n, err)
	}

	// Close interrupts a blocked Read and unregisters the ring.
	done := make(chan error, 1)
	r2.SetDeadline(time.Time{})
	go func() { _, err := r2.Read(); done <- err }()
	time.Sleep(20 * time.Millisecond)
	if err := r2.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, os.ErrClosed) {
			t.Errorf("Read after Close: %v, want os.ErrClosed", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not interrupt Read")
	}
	var v netSbxRun
	if err := env.net.EventMaps().Drops.Lookup(id2, &v); !errors.Is(err, ebpf.ErrKeyNotExist) {
		t.Errorf("run of a closed reader still registered: %v", err)
	}
	// The runner asks for the drops after a drain that may have closed
	// the reader: an error, not a panic.
	if _, err := r2.Dropped(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Dropped after Close: %v, want os.ErrClosed", err)
	}
}

// TestEventDrops: a full ring loses events and counts them.
func TestEventDrops(t *testing.T) {
	env := newNetEnv(t)
	r, err := env.net.Events(env.runID)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	perRing := ringSize / (eventSize + 8)
	want := perRing + 10
	if out, _ := helper(t, env.run, nil, "sockets", itoa(want)); out != "EPERM" {
		t.Fatalf("got %s, want EPERM", out)
	}
	n, err := r.Dropped()
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	r.SetDeadline(time.Now())
	for {
		if _, err := r.Read(); err != nil {
			break
		}
		got++
	}
	if got+int(n) != want || n == 0 {
		t.Errorf("read %d, dropped %d: want %d in all, some dropped", got, n, want)
	}
}

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
	spec, err := loadNet()
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
	if OpConnect4 != Op(netSbxOpSBX_OP_CONNECT4) || OpSocketConnect != Op(netSbxOpSBX_OP_SOCKET_CONNECT) {
		t.Error("Go constants differ from the generated ones")
	}
}

// TestNetSpec: the Go tables that let a warm open skip parsing the object
// agree with it.
func TestNetSpec(t *testing.T) {
	spec, err := loadNet()
	if err != nil {
		t.Fatal(err)
	}
	inner := spec.Maps[netMapSbxEvents].InnerMap
	if inner == nil || inner.Type != ebpf.RingBuf || inner.MaxEntries != ringSize {
		t.Errorf("inner map of sbx_events %+v: want a %d-byte ring buffer", inner, ringSize)
	}
	if len(spec.Programs) != len(netProgs) {
		t.Errorf("object has %d programs, netProgs %d", len(spec.Programs), len(netProgs))
	}
	for _, p := range netProgs {
		ps := spec.Programs[p.name]
		if ps == nil || ps.AttachType != p.attach {
			t.Errorf("program %s: spec %+v, want attach type %v", p.name, ps, p.attach)
		}
	}
	for _, name := range netPinnedMaps {
		if spec.Maps[name] == nil {
			t.Errorf("no map %s", name)
		}
	}
	if got := binary.Size(netSbxEvent{}); got != 336 {
		t.Errorf("struct sbx_event is %d bytes, want 336 (changed? keep it compatible)", got)
	}
}

func encodeEvent(t testing.TB, r netSbxEvent) []byte {
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
		ev   func(*netSbxEvent)
		want string
	}{
		{"connect4", func(e *netSbxEvent) {
			e.Op, e.Family, e.Port = uint32(OpConnect4), afInet, 8080
			copy(e.Addr[:], []byte{127, 0, 0, 1})
		}, "denied connect 127.0.0.1:8080 (1234 curl)"},
		{"connect6", func(e *netSbxEvent) {
			e.Op, e.Family, e.Port, e.Addr = uint32(OpConnect6), afInet6, 443, v6
		}, "denied connect [2001:db8::1]:443 (1234 curl)"},
		{"sendmsg6", func(e *netSbxEvent) {
			e.Op, e.Family, e.Port, e.Addr = uint32(OpSendmsg6), afInet6, 53, v6
		}, "denied sendmsg [2001:db8::1]:53 (1234 curl)"},
		{"bind4", func(e *netSbxEvent) {
			e.Op, e.Family = uint32(OpBind4), afInet
		}, "denied bind 0.0.0.0:0 (1234 curl)"},
		{"socket", func(e *netSbxEvent) {
			e.Op, e.Family, e.SockType, e.Protocol = uint32(OpSocketCreate), afInet, 1, 6
		}, "denied socket AF_INET SOCK_STREAM IPPROTO_TCP (1234 curl)"},
		{"socket unknown", func(e *netSbxEvent) {
			e.Op, e.Family, e.SockType, e.Protocol = uint32(OpSocketCreate), 99, 7, 3
		}, "denied socket AF_99 SOCK_7 proto 3 (1234 curl)"},
		{"open", func(e *netSbxEvent) {
			e.Op = uint32(OpFileOpen)
			cbytes(e.Path[:], "/etc/shadow")
		}, "denied open /etc/shadow (1234 curl)"},
		{"ioctl", func(e *netSbxEvent) {
			e.Op, e.Flags = uint32(OpFileIoctl), 0x5412
			cbytes(e.Path[:], "/dev/pts/0")
		}, "denied ioctl /dev/pts/0 0x5412 (1234 curl)"},
		{"unknown op", func(e *netSbxEvent) { e.Op = 99 }, "denied op99 (1234 curl)"},
		{"lsm connect", func(e *netSbxEvent) {
			e.Op, e.Family, e.Port = uint32(OpSocketConnect), afInet, 22
			copy(e.Addr[:], []byte{10, 0, 0, 1})
		}, "denied connect 10.0.0.1:22 (1234 curl)"},
		{"connect unix family", func(e *netSbxEvent) {
			e.Op, e.Family = uint32(OpSocketConnect), afUnix
		}, "denied connect AF_UNIX (1234 curl)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := netSbxEvent{Pid: 1234, Err: 1}
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
	r := netSbxEvent{CgroupId: 7, Pid: 42, Op: uint32(OpConnect6), Err: 1, Family: afInet6, Port: 1}
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
	f.Add(encodeEvent(f, netSbxEvent{Op: uint32(OpConnect4), Family: afInet, Port: 80}))
	f.Add(encodeEvent(f, netSbxEvent{Op: uint32(OpSocketCreate), Family: 17, SockType: 3}))
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

// BenchmarkEventReader is the per-run cost of the event path: create and
// register a ring, then unregister and free it.
func BenchmarkEventReader(b *testing.B) {
	parent := newTestParent(b)
	n := openTestNet(b, parent, newPinRoot(b))
	b.Cleanup(func() { n.Unpin() })
	for b.Loop() {
		r, err := n.Events(12345)
		if err != nil {
			b.Fatal(err)
		}
		if err := r.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestEventSlots: readers hold distinct rings of the pool, a closed
// reader's ring is reused, and a reader whose process died without closing
// gives its ring back (the kernel drops its flock).
func TestEventSlots(t *testing.T) {
	env := newNetEnv(t)
	r1, err := env.net.Events(101)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := env.net.Events(102)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if r1.slot.index == r2.slot.index {
		t.Fatalf("two readers share slot %d", r1.slot.index)
	}
	slot1, ring1 := r1.slot.index, mapID(t, r1.slot.ring)
	if err := r1.Close(); err != nil {
		t.Fatal(err)
	}
	r3, err := env.net.Events(103)
	if err != nil {
		t.Fatal(err)
	}
	if r3.slot.index != slot1 || mapID(t, r3.slot.ring) != ring1 {
		t.Errorf("after Close: slot %d ring %d, want the freed slot %d ring %d", r3.slot.index, mapID(t, r3.slot.ring), slot1, ring1)
	}
	r3.Close()

	// A process that dies holding a reader.
	out, _ := helper(t, "", nil, "reader", env.parent, env.pinRoot, "104")
	if out != itoa(int(slot1)) {
		t.Fatalf("reader in a child: got slot %q, want %d", out, slot1)
	}
	var v netSbxRun
	if err := env.net.EventMaps().Drops.Lookup(uint64(104), &v); err != nil {
		t.Fatalf("the dead reader's run is not registered (the test cannot tell cleanup from nothing): %v", err)
	}
	r4, err := env.net.Events(105)
	if err != nil {
		t.Fatal(err)
	}
	defer r4.Close()
	if r4.slot.index != slot1 {
		t.Errorf("after the owner died: slot %d, want %d", r4.slot.index, slot1)
	}
	if err := env.net.EventMaps().Drops.Lookup(uint64(104), &v); !errors.Is(err, ebpf.ErrKeyNotExist) {
		t.Errorf("the dead reader's registration is still there: %v", err)
	}
}

func mapID(t *testing.T, m *ebpf.Map) ebpf.MapID {
	t.Helper()
	info, err := m.Info()
	if err != nil {
		t.Fatal(err)
	}
	id, _ := info.ID()
	return id
}

// smallEventMaps creates the maps of events.h with a pool of n rings.
func smallEventMaps(t *testing.T, n uint32, slotDir string) EventMaps {
	t.Helper()
	spec, err := loadNet()
	if err != nil {
		t.Fatal(err)
	}
	newMap := func(name string, max uint32) *ebpf.Map {
		ms := spec.Maps[name].Copy()
		if max > 0 {
			ms.MaxEntries = max
		}
		m, err := ebpf.NewMap(ms)
		if errors.Is(err, ErrNotSupported) {
			t.Skipf("kernel lacks %s maps: %v", ms.Type, err)
		}
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	return EventMaps{
		Events:   newMap(netMapSbxEvents, n),
		Drops:    newMap(netMapSbxDrops, 0),
		Unrouted: newMap(netMapSbxUnrouted, 0),
		SlotDir:  slotDir,
	}
}

func TestEventPoolFull(t *testing.T) {
	requireRoot(t)
	for _, tc := range []struct {
		name    string
		slotDir func() string
	}{
		{"private", func() string { return "" }},
		{"pinned", func() string {
			d := newPinRoot(t)
			if err := os.Mkdir(d, 0o700); err != nil {
				t.Fatal(err)
			}
			return d
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			maps := smallEventMaps(t, 2, tc.slotDir())
			a, err := NewEventReader(maps, 1)
			if err != nil {
				t.Fatal(err)
			}
			b, err := NewEventReader(maps, 2)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if _, err := NewEventReader(maps, 3); !errors.Is(err, ErrNoFreeRing) {
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
			c, err := NewEventReader(maps, 3)
			if err != nil {
				t.Fatalf("after a Close: %v", err)
			}
			c.Close()
		})
	}
}
