package netwall

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/bpf"
	"github.com/sbx-sandbox/sbx/bpf/events"
	"github.com/sbx-sandbox/sbx/bpf/pin"
	"github.com/sbx-sandbox/sbx/policy"
)

// Options tune [Open]. The zero value is what sbx uses.
type Options struct {
	// PinRoot is the bpffs directory holding the pins ([pin.DefaultRoot] if
	// empty). One pin root serves the parents of every build on a host:
	// every other "net-*" directory in it (other program versions, or a
	// parent that was recreated) is removed by the first open that finds
	// it unused (no open [Wall] holds it), which detaches its programs
	// once no process holds them open. Tests use their own.
	PinRoot string
}

// Wall is an open handle on the network wall: programs attached to a parent
// cgroup (and the cgroup2 root, see the package doc) and pinned, plus the
// per-run maps. Keep it open for as long as a run that relies on it is
// alive: the open links keep the programs attached even if another process
// replaces the pins meanwhile.
type Wall struct {
	dir      string
	parent   string
	root     string
	parentID uint64
	rootID   uint64
	links    []link.Link // in netProgs order
	maps     map[string]*ebpf.Map
	loaded   bool
	use      *pin.Use // held on dir while the handle is open
}

// netProg says where one program of net.c is attached.
type netProg struct {
	name   string
	attach ebpf.AttachType
	atRoot bool // cgroup2 root instead of the parent (see net.c)
}

var netProgs = []netProg{
	{netProgSbxSockCreate, ebpf.AttachCGroupInetSockCreate, false},
	{netProgSbxConnect4, ebpf.AttachCGroupInet4Connect, true},
	{netProgSbxConnect6, ebpf.AttachCGroupInet6Connect, true},
	{netProgSbxSendmsg4, ebpf.AttachCGroupUDP4Sendmsg, true},
	{netProgSbxSendmsg6, ebpf.AttachCGroupUDP6Sendmsg, true},
	{netProgSbxBind4, ebpf.AttachCGroupInet4Bind, true},
	{netProgSbxBind6, ebpf.AttachCGroupInet6Bind, true},
}

// netPinnedMaps are the maps Go uses after loading; they are pinned so that a
// warm open finds them.
var netPinnedMaps = []string{netMapSbxNetSandboxes, netMapSbxEvents, netMapSbxDrops, netMapSbxUnrouted}

// netVersion names the pin directory of this build's programs: a hash of
// the embedded object, so a changed program never reuses old pins.
var netVersion = sync.OnceValue(func() string {
	sum := sha256.Sum256(_NetBytes)
	return hex.EncodeToString(sum[:8])
})

// WallID names this build's wall: the base name of the parent cgroup its
// programs wall in (sbx's root runs live in <cgroup2>/sbx/<WallID>/<run>)
// and the prefix of its pin directories. A changed program gets a new one,
// so two builds in use at once (an upgrade while a run goes on, two
// checkouts) wall in disjoint sets of runs: each build's programs see only
// its own runs, and neither refuses the other's.
func WallID() string { return wallPrefix + netVersion() }

// wallPrefix begins every [WallID] (sandbox.WallGroupPrefix is the same).
const wallPrefix = "net-"

// ErrParentGone means the parent cgroup was removed (by another build's
// open, see [WallID]) while [Open] waited for the pin lock: create it again
// and open again.
var ErrParentGone = errors.New("removed while opening (create it again)")

// errPins means the pin directory is missing or incomplete.
var errPins = errors.New("pins missing or incomplete")

// Open returns the network wall for the run cgroups under parentCgroup,
// a cgroup2 directory that must already exist and must not be the cgroup2
// root. It reuses the pinned programs when they are there and still
// attached (re-attaching any link that was detached), and otherwise loads,
// attaches and pins them. opts may be nil. The error wraps [bpf.ErrNotSupported]
// when the kernel lacks cgroup2, cgroup BPF or bpf_link.
func Open(parentCgroup string, opts *Options) (*Wall, error) {
	pinRoot := pin.DefaultRoot
	if opts != nil && opts.PinRoot != "" {
		pinRoot = opts.PinRoot
	}
	if err := bpf.PrepareLoad(); err != nil {
		return nil, fmt.Errorf("open net wall: %w", err)
	}
	parent, err := bpf.CleanAbs(parentCgroup)
	if err != nil {
		return nil, fmt.Errorf("open net wall: %w", err)
	}
	root, err := bpf.Cgroup2RootOf(parent)
	if err != nil {
		return nil, fmt.Errorf("open net wall: %w", err)
	}
	if parent == root {
		return nil, fmt.Errorf("open net wall: parent cgroup %s is the cgroup2 root (every task would be walled in)", parent)
	}
	n := &Wall{parent: parent, root: root}
	if n.parentID, err = bpf.CgroupID(parent); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			err = fmt.Errorf("%w: %w", ErrParentGone, err)
		}
		return nil, fmt.Errorf("open net wall: parent: %w", err)
	}
	if n.rootID, err = bpf.CgroupID(root); err != nil {
		return nil, fmt.Errorf("open net wall: cgroup2 root: %w", err)
	}
	n.dir = filepath.Join(pinRoot, fmt.Sprintf("%s-%d", WallID(), n.parentID))

	// Warm path, without the lock: every pin there and every link attached.
	if err := n.openPinned(false); err == nil {
		n.sweep(pinRoot)
		return n, nil
	}

	lock, err := pin.LockRoot(pinRoot)
	if err != nil {
		return nil, fmt.Errorf("open net wall: %w", err)
	}
	defer lock.Unlock()
	// Under the lock no other sbx removes the parent (removeUnusedParents
	// runs under it), but one may have done so before: then the parent is
	// gone, or a new cgroup took its path, and programs loaded for the id
	// read above would not see the runs created there.
	if id, err := bpf.CgroupID(parent); err != nil || id != n.parentID {
		return nil, fmt.Errorf("open net wall: parent cgroup %s: %w", parent, ErrParentGone)
	}
	// Another process may have finished loading meanwhile; a detached link
	// is re-attached here.
	err = n.openPinned(true)
	if err == nil {
		if pin.RemoveOthers(pinRoot, wallPrefix, filepath.Base(n.dir)) == nil {
			n.removeUnusedParents(pinRoot)
		}
		return n, nil
	}
	if !errors.Is(err, errPins) {
		return nil, fmt.Errorf("open net wall: %w", err)
	}
	if err := n.removeStale(pinRoot); err != nil {
		return nil, fmt.Errorf("open net wall: %w", err)
	}
	if err := n.load(); err != nil {
		return nil, fmt.Errorf("open net wall: %w", err)
	}
	return n, nil
}

// openPinned opens the pins in n.dir and checks that each link is attached
// where it belongs. With repair, a link that is not is attached again
// (under the pin lock); without, that is an error. Missing pins give an
// error wrapping errPins.
func (n *Wall) openPinned(repair bool) (err error) {
	defer func() {
		if err != nil {
			n.closeAll()
		}
	}()
	if n.use, err = pin.Hold(n.dir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %w", errPins, err)
		}
		return err
	}
	n.maps = make(map[string]*ebpf.Map, len(netPinnedMaps))
	for _, name := range netPinnedMaps {
		m, err := ebpf.LoadPinnedMap(filepath.Join(n.dir, "map_"+name), nil)
		if err != nil {
			return fmt.Errorf("%w: map %s: %w", errPins, name, err)
		}
		n.maps[name] = m
	}
	n.links = make([]link.Link, len(netProgs))
	for i, p := range netProgs {
		path := filepath.Join(n.dir, "link_"+p.name)
		l, err := link.LoadPinnedLink(path, nil)
		if err != nil {
			return fmt.Errorf("%w: link %s: %w", errPins, p.name, err)
		}
		n.links[i] = l
		ok, err := n.attached(l, p)
		if err != nil {
			return err
		}
		if ok {
			continue
		}
		if !repair {
			return fmt.Errorf("link %s is detached", p.name)
		}
		if n.links[i], err = n.reattach(p, l, path); err != nil {
			return err
		}
	}
	return nil
}

// attached reports whether l attaches p where it belongs. A link whose
// cgroup was detached (bpftool link detach) reports cgroup id 0.
func (n *Wall) attached(l link.Link, p netProg) (bool, error) {
	info, err := l.Info()
	if err != nil {
		return false, fmt.Errorf("link %s: %w", p.name, err)
	}
	cg := info.Cgroup()
	if cg == nil {
		return false, fmt.Errorf("link %s: not a cgroup link", p.name)
	}
	return cg.CgroupId == n.target(p).id && ebpf.AttachType(cg.AttachType) == p.attach, nil
}

// reattach replaces the detached link old (pinned at path) with a new link
// of the same pinned program.
func (n *Wall) reattach(p netProg, old link.Link, path string) (link.Link, error) {
	prog, err := ebpf.LoadPinnedProgram(filepath.Join(n.dir, "prog_"+p.name), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: program %s: %w", errPins, p.name, err)
	}
	defer prog.Close()
	l, err := n.attach(p, prog)
	if err != nil {
		return nil, err
	}
	if err := old.Unpin(); err != nil {
		l.Close()
		return nil, fmt.Errorf("re-attach %s: %w", p.name, err)
	}
	old.Close()
	if err := l.Pin(path); err != nil {
		l.Close()
		return nil, fmt.Errorf("re-attach %s: pin: %w", p.name, err)
	}
	return l, nil
}

type cgroupTarget struct {
	path string
	id   uint64
}

func (n *Wall) target(p netProg) cgroupTarget {
	if p.atRoot {
		return cgroupTarget{n.root, n.rootID}
	}
	return cgroupTarget{n.parent, n.parentID}
}

// attach links prog to p's cgroup (BPF_LINK_CREATE; multi-attach, so other
// programs there keep running).
func (n *Wall) attach(p netProg, prog *ebpf.Program) (link.Link, error) {
	t := n.target(p)
	f, err := os.Open(t.path)
	if err != nil {
		return nil, fmt.Errorf("attach %s: %w", p.name, err)
	}
	defer f.Close()
	l, err := link.AttachRawLink(link.RawLinkOptions{Target: int(f.Fd()), Program: prog, Attach: p.attach})
	if err != nil {
		if errors.Is(err, bpf.ErrNotSupported) {
			return nil, fmt.Errorf("attach %s to %s: %w (cgroup bpf_link needs Linux 5.7)", p.name, t.path, err)
		}
		return nil, fmt.Errorf("attach %s to %s: %w", p.name, t.path, err)
	}
	return l, nil
}

// removeStale removes a broken n.dir and the pin directories of other
// versions or parents (see Options.PinRoot) that no open handle holds:
// those a run still uses stay, attached, until a later open sweeps them.
// Called under the pin lock.
func (n *Wall) removeStale(pinRoot string) error {
	if err := pin.RemoveDir(n.dir); err != nil {
		return err
	}
	if err := pin.RemoveOthers(pinRoot, wallPrefix, filepath.Base(n.dir)); err != nil {
		return err
	}
	n.removeUnusedParents(pinRoot)
	return nil
}

// sweep is the warm open's garbage collection: when the pin root holds
// another build's pins, or the parent has a sibling of another build, it
// takes the pin lock and removes those nobody uses. A failure leaves them
// for a later open and is not reported.
func (n *Wall) sweep(pinRoot string) {
	if !pin.HasOthers(pinRoot, wallPrefix, filepath.Base(n.dir)) && len(n.otherParents()) == 0 {
		return
	}
	lock, err := pin.LockRoot(pinRoot)
	if err != nil {
		return
	}
	defer lock.Unlock()
	if pin.RemoveOthers(pinRoot, wallPrefix, filepath.Base(n.dir)) == nil {
		n.removeUnusedParents(pinRoot)
	}
}

// otherParents lists the parent cgroups of other builds: the siblings of
// this wall's parent named like a [WallID], when the parent itself is
// named by this build's (sbx's layout, <cgroup2>/sbx/<WallID>; any other
// parent, a test's, has no such siblings).
func (n *Wall) otherParents() []string {
	if filepath.Base(n.parent) != WallID() {
		return nil
	}
	dir := filepath.Dir(n.parent)
	if dir == n.root {
		return nil // never at the cgroup2 root, whose cgroups are not sbx's
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && strings.HasPrefix(e.Name(), wallPrefix) && e.Name() != WallID() {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// removeUnusedParents removes the parent cgroup of every other build
// whose pins are gone (none in pinRoot names it by its cgroup id, so no
// program of it is pinned and no open handle uses it): what an older
// build leaves once its last run ended and a later open removed its pins.
// rmdir fails, and the cgroup stays, while a run cgroup is in it. Called
// under the pin lock, after the unused pins are removed; a build that
// created its parent but has not pinned its programs yet (it waits for
// this lock) finds its parent gone and creates it again (see the runner).
func (n *Wall) removeUnusedParents(pinRoot string) {
	for _, p := range n.otherParents() {
		id, err := bpf.CgroupID(p)
		if err != nil {
			continue
		}
		pinned := filepath.Join(pinRoot, fmt.Sprintf("%s-%d", filepath.Base(p), id))
		if _, err := os.Lstat(pinned); err == nil || !errors.Is(err, os.ErrNotExist) {
			continue
		}
		_ = unix.Rmdir(p) // EBUSY while a run cgroup is in it: left alone
	}
}

// load loads and verifies the programs, attaches and pins them. Called under
// the pin lock with no n.dir present.
func (n *Wall) load() (err error) {
	spec, err := loadNet()
	if err != nil {
		return err
	}
	if err := spec.Variables[netVarSbxParentId].Set(n.parentID); err != nil {
		return fmt.Errorf("set parent cgroup: %w", err)
	}
	var objs struct {
		netPrograms
		netMaps
	}
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		for _, t := range []ebpf.ProgramType{ebpf.CGroupSock, ebpf.CGroupSockAddr} {
			if perr := features.HaveProgramType(t); errors.Is(perr, bpf.ErrNotSupported) {
				return fmt.Errorf("load programs: %w: %w", perr, err)
			}
		}
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return fmt.Errorf("load programs: %w", err)
		}
		return fmt.Errorf("load programs: %w (needs root: CAP_BPF, CAP_NET_ADMIN)", err)
	}
	progs := map[string]*ebpf.Program{
		netProgSbxSockCreate: objs.SbxSockCreate,
		netProgSbxConnect4:   objs.SbxConnect4,
		netProgSbxConnect6:   objs.SbxConnect6,
		netProgSbxSendmsg4:   objs.SbxSendmsg4,
		netProgSbxSendmsg6:   objs.SbxSendmsg6,
		netProgSbxBind4:      objs.SbxBind4,
		netProgSbxBind6:      objs.SbxBind6,
	}
	n.maps = map[string]*ebpf.Map{
		netMapSbxNetSandboxes: objs.SbxNetSandboxes,
		netMapSbxEvents:       objs.SbxEvents,
		netMapSbxDrops:        objs.SbxDrops,
		netMapSbxUnrouted:     objs.SbxUnrouted,
	}
	defer func() {
		for _, p := range progs {
			p.Close()
		}
		if err != nil {
			n.closeAll()
			_ = pin.RemoveDir(n.dir)
		}
	}()

	if err := os.Mkdir(n.dir, 0o700); err != nil {
		return fmt.Errorf("create pin dir: %w", err)
	}
	n.links = make([]link.Link, len(netProgs))
	for i, p := range netProgs {
		if n.links[i], err = n.attach(p, progs[p.name]); err != nil {
			return err
		}
		if err := n.links[i].Pin(filepath.Join(n.dir, "link_"+p.name)); err != nil {
			return fmt.Errorf("pin link %s: %w", p.name, err)
		}
		if err := progs[p.name].Pin(filepath.Join(n.dir, "prog_"+p.name)); err != nil {
			return fmt.Errorf("pin program %s: %w", p.name, err)
		}
	}
	for _, name := range netPinnedMaps {
		if err := n.maps[name].Pin(filepath.Join(n.dir, "map_"+name)); err != nil {
			return fmt.Errorf("pin map %s: %w", name, err)
		}
	}
	if n.use, err = pin.Hold(n.dir); err != nil {
		return err
	}
	n.loaded = true
	return nil
}

func (n *Wall) closeAll() error {
	var errs []error
	for _, l := range n.links {
		if l != nil {
			errs = append(errs, l.Close())
		}
	}
	for _, m := range n.maps {
		errs = append(errs, m.Close())
	}
	n.links, n.maps = nil, nil
	n.use.Release()
	n.use = nil
	return errors.Join(errs...)
}

// Close releases the handle. The pins, and so the wall, stay.
func (n *Wall) Close() error {
	if err := n.closeAll(); err != nil {
		return fmt.Errorf("close net wall: %w", err)
	}
	return nil
}

// Unpin removes this wall's pins (for `sbx` cleanup and tests). The programs
// stay attached until the last process holding them (this handle included)
// closes them.
func (n *Wall) Unpin() error {
	if err := pin.RemoveDir(n.dir); err != nil {
		return fmt.Errorf("unpin net wall: %w", err)
	}
	return nil
}

// PinDir is the bpffs directory holding this wall's pins.
func (n *Wall) PinDir() string { return n.dir }

// Loaded reports whether this Open loaded the programs (cold) rather than
// reusing pins.
func (n *Wall) Loaded() bool { return n.loaded }

// Policy holds the exceptions one run gets (see [policy.WallRules]). The
// zero value grants none.
type Policy = policy.WallRules

// Allow grants the run whose cgroup id is cgroupID the exceptions in p,
// replacing any it had. Call it before the run's first task starts.
func (n *Wall) Allow(cgroupID uint64, p Policy) error {
	e, err := p.Compile()
	if err != nil {
		return err
	}
	v := netSbxNetPolicy{
		Flags:       uint32(e.Flags),
		ProxyFamily: e.ProxyFamily,
		ProxyAddr:   e.ProxyAddr,
		ProxyPort:   e.ProxyPort,
		NetnsCookie: e.NetnsCookie,
		Nfwd:        e.NForwards,
	}
	for i, f := range e.Forwards {
		v.Fwd[i].Family, v.Fwd[i].Addr, v.Fwd[i].Port = f.Family, f.Addr, f.Port
	}
	if err := n.maps[netMapSbxNetSandboxes].Put(cgroupID, &v); err != nil {
		return fmt.Errorf("allow run %d: %w", cgroupID, err)
	}
	return nil
}

// Revoke removes the run's exceptions (at teardown). Revoking a run that has
// none is not an error.
func (n *Wall) Revoke(cgroupID uint64) error {
	err := n.maps[netMapSbxNetSandboxes].Delete(cgroupID)
	if err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("revoke run %d: %w", cgroupID, err)
	}
	return nil
}

// EventMaps returns the event routing maps of this wall, for
// [events.NewReader] or for sharing with another object that includes
// events.h (ebpf.CollectionOptions.MapReplacements, by map name).
func (n *Wall) EventMaps() events.Maps {
	return events.Maps{
		Events:   n.maps[netMapSbxEvents],
		Drops:    n.maps[netMapSbxDrops],
		Unrouted: n.maps[netMapSbxUnrouted],
		SlotDir:  n.dir,
	}
}

// Events registers a ring buffer for the run whose cgroup id is cgroupID and
// returns its reader. Call it before the run's first task starts, and Close
// the reader at teardown.
func (n *Wall) Events(cgroupID uint64) (*events.Reader, error) {
	return events.NewReader(n.EventMaps(), cgroupID)
}

// ForeignSockCreate returns the nearest cgroup, from the parent up to (not
// including) the cgroup2 root, that has a cgroup/sock_create program
// attached other than this wall's, or "" if there is none. Such a program
// is another wall that applies to this wall's runs too: an sbx build from
// before per-build parents attached its wall to the shared sbx cgroup
// itself, the parent of every build's parent, and a wall of this build
// whose pins were replaced may still be attached to the parent while a run
// holds it. Each refuses every inet socket of a run it does not know, so
// while one is attached, a run of this build gets none of its exceptions
// (loopback, proxy, host network). Another build's wall on its own parent
// (a sibling) is not counted: it never sees this wall's runs.
func (n *Wall) ForeignSockCreate() (string, error) {
	info, err := n.links[0].Info() // netProgs[0] is sock_create
	if err != nil {
		return "", fmt.Errorf("query own sock_create link: %w", err)
	}
	for dir := n.parent; dir != n.root && len(dir) > len(n.root); dir = filepath.Dir(dir) {
		progs, err := attachedSockCreate(dir)
		if err != nil {
			return "", err
		}
		for _, id := range progs {
			if id != info.Program {
				return dir, nil
			}
		}
	}
	return "", nil
}

// attachedSockCreate lists the cgroup/sock_create programs attached to the
// cgroup dir itself.
func attachedSockCreate(dir string) ([]ebpf.ProgramID, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("query cgroup %s: %w", dir, err)
	}
	defer f.Close()
	res, err := link.QueryPrograms(link.QueryOptions{Target: int(f.Fd()), Attach: ebpf.AttachCGroupInetSockCreate})
	if err != nil {
		return nil, fmt.Errorf("query programs of cgroup %s: %w", dir, err)
	}
	ids := make([]ebpf.ProgramID, 0, len(res.Programs))
	for _, p := range res.Programs {
		ids = append(ids, p.ID)
	}
	return ids, nil
}
