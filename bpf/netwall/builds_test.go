package netwall

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/bpf"
	"github.com/sbx-sandbox/sbx/bpf/pin"
)

// otherBuild is the WallID of a made-up other build of the wall.
const otherBuild = wallPrefix + "0000000000000000"

// disguise renames the pin directory of w to the one another build
// (named build) would have for w's parent, as TestNetOtherVersionInUse
// does: the open handle holds it by inode, so it is that build's
// directory in use.
func disguise(t *testing.T, w *Wall, pinRoot, build string) {
	t.Helper()
	to := filepath.Join(pinRoot, build+"-"+strconv.FormatUint(w.parentID, 10))
	if err := os.Rename(w.PinDir(), to); err != nil {
		t.Fatalf("rename pins: %v", err)
	}
	w.dir = to
}

func cgroupID(t *testing.T, dir string) uint64 {
	t.Helper()
	id, err := bpf.CgroupID(dir)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestNetTwoBuilds: two builds of the wall in use at once, each on its own
// parent (sbx's layout: <sbx>/<WallID>/<run>), each with a run allowed its
// loopback by its own build's entry: both runs can make sockets and reach
// loopback, and a run of either build without an entry stays walled in.
// The control puts both builds' walls on one parent (the layout before
// per-build parents): there each refuses the run the other allowed, which
// is what the separate parents fix.
func TestNetTwoBuilds(t *testing.T) {
	top := newTestParent(t)
	pinRoot := newPinRoot(t)
	own := ownNetnsCookie(t)
	tcp := listenTCP(t, "tcp4", "127.0.0.1:0").Addr().(*net.TCPAddr).AddrPort()
	udp6 := []string{"socket", itoa(unix.AF_INET6), itoa(unix.SOCK_DGRAM), "0"}
	dial := []string{"dial", tcp.String()}

	type build struct {
		wall          *Wall
		run, unlisted string
	}
	open := func(name string) build {
		parent := newCgroupDir(t, filepath.Join(top, name))
		b := build{
			run:      newCgroupDir(t, filepath.Join(parent, "run")),
			unlisted: newCgroupDir(t, filepath.Join(parent, "run2")),
		}
		b.wall = openTestNet(t, parent, pinRoot)
		if name != WallID() {
			disguise(t, b.wall, pinRoot, name)
		}
		if err := b.wall.Allow(cgroupID(t, b.run), Policy{Loopback: true, NetnsCookie: own}); err != nil {
			t.Fatal(err)
		}
		return b
	}
	other := open(otherBuild)
	this := open(WallID()) // its open sweeps: the other build's pins are held
	if !this.wall.Loaded() {
		t.Error("this build reused the other build's pins")
	}
	for _, b := range []build{this, other} {
		if dir, err := b.wall.ForeignSockCreate(); err != nil || dir != "" {
			t.Errorf("ForeignSockCreate of %s: %q, %v; want none (the other wall is on a sibling)", b.wall.PinDir(), dir, err)
		}
	}
	for name, b := range map[string]build{"this build": this, "other build": other} {
		for _, args := range [][]string{udp6, dial} {
			if in, _ := helper(t, b.run, nil, args...); in != "ok" {
				t.Errorf("%s's run allowed loopback, %v: got %s, want ok", name, args, in)
			}
			if in, _ := helper(t, b.unlisted, nil, args...); in != "EPERM" {
				t.Errorf("%s's run without an entry, %v: got %s, want EPERM", name, args, in)
			}
		}
	}

	// Control: both walls on one parent.
	shared := newCgroupDir(t, filepath.Join(top, "shared"))
	run := newCgroupDir(t, filepath.Join(shared, "run"))
	a := openTestNet(t, shared, pinRoot)
	disguise(t, a, pinRoot, otherBuild)
	b := openTestNet(t, shared, pinRoot)
	if err := b.Allow(cgroupID(t, run), Policy{Loopback: true, NetnsCookie: own}); err != nil {
		t.Fatal(err)
	}
	if in, _ := helper(t, run, nil, udp6...); in != "EPERM" {
		t.Errorf("control, two walls on one parent, run allowed by one: got %s, want EPERM (the other's refusal)", in)
	}
	if dir, err := b.ForeignSockCreate(); err != nil || dir != shared {
		t.Errorf("control: ForeignSockCreate = %q, %v; want %s", dir, err, shared)
	}
}

// TestNetLegacyWallAbove: a wall on the cgroup above this build's parent
// (an sbx from before per-build parents walled in the shared sbx cgroup
// itself) still refuses this build's runs their exceptions, and
// ForeignSockCreate names that cgroup, so that sbx can say so.
func TestNetLegacyWallAbove(t *testing.T) {
	top := newTestParent(t)
	pinRoot := newPinRoot(t)
	own := ownNetnsCookie(t)
	parent := newCgroupDir(t, filepath.Join(top, WallID()))
	run := newCgroupDir(t, filepath.Join(parent, "run"))
	this := openTestNet(t, parent, pinRoot)
	if err := this.Allow(cgroupID(t, run), Policy{Loopback: true, NetnsCookie: own}); err != nil {
		t.Fatal(err)
	}
	udp6 := []string{"socket", itoa(unix.AF_INET6), itoa(unix.SOCK_DGRAM), "0"}
	if in, _ := helper(t, run, nil, udp6...); in != "ok" {
		t.Fatalf("run allowed loopback, no wall above: got %s, want ok", in)
	}
	if dir, err := this.ForeignSockCreate(); err != nil || dir != "" {
		t.Fatalf("ForeignSockCreate without a wall above: %q, %v; want none", dir, err)
	}
	legacy := openTestNet(t, top, pinRoot)
	disguise(t, legacy, pinRoot, otherBuild)
	if in, _ := helper(t, run, nil, udp6...); in != "EPERM" {
		t.Errorf("run allowed loopback under a legacy wall: got %s, want EPERM", in)
	}
	if dir, err := this.ForeignSockCreate(); err != nil || dir != top {
		t.Errorf("ForeignSockCreate under a legacy wall: %q, %v; want %s", dir, err, top)
	}
}

// TestNetRemovesUnusedParents: an open of this build in sbx's layout
// removes the parent cgroups of other builds that no pins name (their
// last run ended and their pins were removed), and keeps those whose pins
// a run holds, those with a run cgroup in them, and cgroups not named like
// a build's wall.
func TestNetRemovesUnusedParents(t *testing.T) {
	top := newTestParent(t)
	pinRoot := newPinRoot(t)
	mk := func(name string) string {
		d := filepath.Join(top, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Remove(d) })
		return d
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	unused := mk(wallPrefix + "1111111111111111") // no pins: removed
	busy := mk(wallPrefix + "2222222222222222")   // a run in it, no pins: stays
	busyRun := newCgroupDir(t, filepath.Join(busy, "run"))
	inUse := mk(otherBuild) // its pins held by a run's handle: stays
	held := openTestNet(t, inUse, pinRoot)
	disguise(t, held, pinRoot, otherBuild)
	stranger := mk("not-a-wall") // not a build's: stays
	released := mk(wallPrefix + "3333333333333333")
	gone := openTestNet(t, released, pinRoot) // its pins go once released
	disguise(t, gone, pinRoot, filepath.Base(released))

	parent := mk(WallID())
	w := openTestNet(t, parent, pinRoot)
	w.Unpin()
	if exists(unused) {
		t.Errorf("%s: the parent of a build without pins was kept", unused)
	}
	if !exists(busy) || !exists(busyRun) || !exists(inUse) || !exists(stranger) {
		t.Errorf("removed a parent in use or not a build's: busy %v, its run %v, in use %v, stranger %v",
			exists(busy), exists(busyRun), exists(inUse), exists(stranger))
	}
	if !exists(released) {
		t.Errorf("%s: removed while a handle held its pins", released)
	}
	if _, err := os.Stat(held.PinDir()); err != nil {
		t.Errorf("pins of the build in use: %v", err)
	}

	// Its run ends: the next open (warm) removes its pins, then its parent.
	gone.Close()
	w2 := openTestNet(t, parent, pinRoot)
	defer w2.Unpin()
	if _, err := os.Stat(gone.PinDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pins of the ended build: %v, want removed", err)
	}
	if exists(released) {
		t.Errorf("%s: the parent of the ended build was kept", released)
	}
	if !exists(inUse) || !exists(parent) {
		t.Errorf("in use %v, own parent %v: want both kept", exists(inUse), exists(parent))
	}
}

// TestNetParentReplacedWhileOpening: a parent removed and created again
// (another build's open removed it, this build's sbx made it anew) while
// an Open waited for the pin lock is not loaded for: programs set up for
// the old cgroup id would not see the runs of the new one. Open says so
// (ErrParentGone), and the next Open loads for the new parent.
func TestNetParentReplacedWhileOpening(t *testing.T) {
	top := newTestParent(t)
	pinRoot := newPinRoot(t)
	parent := filepath.Join(top, WallID())
	if err := os.Mkdir(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(parent) })
	lock, err := pin.LockRoot(pinRoot)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		w, err := Open(parent, &Options{PinRoot: pinRoot})
		if err == nil {
			w.Unpin()
			w.Close()
		}
		done <- err
	}()
	time.Sleep(300 * time.Millisecond) // Open has read the parent's id and waits for the lock
	if err := os.Remove(parent); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	lock.Unlock()
	if err := <-done; !errors.Is(err, ErrParentGone) {
		t.Fatalf("Open with its parent replaced meanwhile: %v, want ErrParentGone", err)
	}
	w := openTestNet(t, parent, pinRoot)
	defer w.Unpin()
	if w.parentID != cgroupID(t, parent) {
		t.Errorf("the next Open loaded for cgroup %d, want the parent's %d", w.parentID, cgroupID(t, parent))
	}
}
