package netwall

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/bpf"
	"github.com/sbx-sandbox/sbx/bpf/events"
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
		op     events.Op
		family uint32
		typ    uint32
		proto  uint32
		addr   netip.AddrPort
		str    string // String() with %d for the pid
	}{
		{"socket", nil, []string{"socket", itoa(unix.AF_INET6), itoa(unix.SOCK_DGRAM), "0"},
			events.OpSocketCreate, unix.AF_INET6, unix.SOCK_DGRAM, unix.IPPROTO_UDP, netip.AddrPort{},
			"denied socket AF_INET6 SOCK_DGRAM IPPROTO_UDP (%d netwall.test)"},
		{"raw socket", nil, []string{"socket", itoa(unix.AF_INET), itoa(unix.SOCK_RAW), itoa(unix.IPPROTO_ICMP)},
			events.OpSocketCreate, unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP, netip.AddrPort{},
			"denied socket AF_INET SOCK_RAW IPPROTO_ICMP (%d netwall.test)"},
		{"connect", []*os.File{hostSocket(t, unix.AF_INET, unix.SOCK_STREAM)}, []string{"connect", "3", tcp4.String()},
			events.OpConnect4, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_TCP, tcp4,
			"denied connect " + tcp4.String() + " (%d netwall.test)"},
		{"sendto", []*os.File{hostSocket(t, unix.AF_INET, unix.SOCK_DGRAM)}, []string{"sendto", "3", udp4.String()},
			events.OpSendmsg4, unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_UDP, udp4,
			"denied sendmsg " + udp4.String() + " (%d netwall.test)"},
		{"bind", []*os.File{hostSocket(t, unix.AF_INET, unix.SOCK_STREAM)}, []string{"bind", "3", any4.String()},
			events.OpBind4, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_TCP, any4,
			"denied bind 127.0.0.1:0 (%d netwall.test)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The same operation outside the sandbox is allowed and
			// reported nowhere.
			if tc.op == events.OpSocketCreate {
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
			if int(e.PID) != pid || e.CgroupID != env.runID || e.Errno != syscall.EPERM || e.Comm != "netwall.test" {
				t.Errorf("event %+v: want pid %d cgroup %d EPERM comm netwall.test", e, pid, env.runID)
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
	id2, err := bpf.CgroupID(run2)
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
	if e := readEvent(t, r2); e.CgroupID != id2 || e.Op != events.OpSocketCreate {
		t.Errorf("run2 event %+v: want socket of cgroup %d", e, id2)
	}
	r.SetDeadline(time.Now().Add(50 * time.Millisecond))
	if e, err := r.Read(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("run1 reader got %v, %v: want nothing (os.ErrDeadlineExceeded)", e, err)
	}

	// A run without a reader is still denied; its events are counted.
	run3 := newCgroupDir(t, filepath.Join(env.parent, "run3"))
	before, err := events.Unrouted(env.net.EventMaps())
	if err != nil {
		t.Fatal(err)
	}
	if in, _ := helper(t, run3, nil, "socket", itoa(unix.AF_INET), itoa(unix.SOCK_STREAM), "0"); in != "EPERM" {
		t.Fatalf("run3: got %s, want EPERM", in)
	}
	if after, err := events.Unrouted(env.net.EventMaps()); err != nil || after != before+1 {
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
	spec, err := loadNet()
	if err != nil {
		t.Fatal(err)
	}
	ringSize := int(spec.Maps[netMapSbxEvents].InnerMap.MaxEntries)
	perRing := ringSize / (binary.Size(netSbxEvent{}) + 8)
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
	if slotOf(t, r1) == slotOf(t, r2) {
		t.Fatalf("two readers share slot %d", slotOf(t, r1))
	}
	slot1, ring1 := slotOf(t, r1), ringID(t, env.net, slotOf(t, r1))
	if err := r1.Close(); err != nil {
		t.Fatal(err)
	}
	r3, err := env.net.Events(103)
	if err != nil {
		t.Fatal(err)
	}
	if slotOf(t, r3) != slot1 || ringID(t, env.net, slotOf(t, r3)) != ring1 {
		t.Errorf("after Close: slot %d ring %d, want the freed slot %d ring %d", slotOf(t, r3), ringID(t, env.net, slotOf(t, r3)), slot1, ring1)
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
	if slotOf(t, r4) != slot1 {
		t.Errorf("after the owner died: slot %d, want %d", slotOf(t, r4), slot1)
	}
	if err := env.net.EventMaps().Drops.Lookup(uint64(104), &v); !errors.Is(err, ebpf.ErrKeyNotExist) {
		t.Errorf("the dead reader's registration is still there: %v", err)
	}
}

// ringID is the id of the ring buffer in slot of the wall's pool.
func ringID(t *testing.T, n *Wall, slot uint32) uint32 {
	t.Helper()
	var id uint32
	if err := n.EventMaps().Events.Lookup(slot, &id); err != nil {
		t.Fatalf("ring of slot %d: %v", slot, err)
	}
	return id
}

// TestSpec: the Go tables that let a warm open skip parsing the object
// agree with it.
func TestSpec(t *testing.T) {
	spec, err := loadNet()
	if err != nil {
		t.Fatal(err)
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
}

// slotOf is the ring slot an open reader holds.
func slotOf(t *testing.T, r *events.Reader) uint32 {
	t.Helper()
	slot, ok := r.Slot()
	if !ok {
		t.Fatal("reader holds no slot")
	}
	return slot
}
