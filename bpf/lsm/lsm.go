package lsm

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/bpf"
	"github.com/sbx-sandbox/sbx/bpf/events"
	"github.com/sbx-sandbox/sbx/bpf/pin"
	"github.com/sbx-sandbox/sbx/policy"
)

// Options tune [Open]. The zero value loads private programs and
// event maps that live as long as the [LSM].
type Options struct {
	// Events, if set, are the event routing maps to share (netwall.Wall.EventMaps),
	// so that LSM denials land in the same per-run rings as the network
	// wall's and one [events.Reader] per run sees both.
	Events *events.Maps
	// PinRoot, if set, is a bpffs directory (such as [pin.DefaultRoot])
	// where the programs' links and maps are pinned, so that later
	// processes reuse them instead of loading and verifying the programs
	// again. Every other "lsm-*" directory there (older program versions,
	// or pins bound to event maps that were replaced) is removed by the
	// first open that finds it unused (no open [LSM] holds it).
	PinRoot string
}

// LSM is an open handle on the BPF LSM tier: the programs of lsm.c,
// attached to their hooks for the whole host, and the per-sandbox maps.
// Keep it open while a sandbox relies on it (with pins, the programs stay
// attached after Close).
//
// Only tasks of registered sandboxes ([LSM.AddSandbox]) are restricted: a
// task belongs to a sandbox when its cgroup2 cgroup, or an ancestor, is the
// sandbox's (so every descendant process, nested cgroup and io_uring worker
// is covered). For those tasks the programs refuse
//
//   - with EACCES: opening a file outside the sandbox's [FilePolicy] or
//     opening a read-only one for writing (O_WRONLY, O_RDWR, O_TRUNC; exec
//     and mmap need read access); creating (O_CREAT, mknod, mkdir,
//     symlink), removing, truncating, chmod/chown, hard-linking or renaming
//     outside the read-write part of the policy;
//   - with EPERM: the TIOCSTI and TIOCLINUX ioctls; ptrace and signals to
//     tasks outside the sandbox; bpf(2); mount, move_mount, umount and
//     pivot_root; creating a socket of any family but AF_UNIX, and connect,
//     bind and sendmsg on any socket but AF_UNIX (also one that leaked in).
//
// Each denial is an [events.Event] in the ring that the sandbox's cgroup id has in
// the event maps ([LSM.Events], or the shared maps of [Options.Events]):
// Path is the file (for creation, the new name; for link and rename, the
// source), the ioctl's tty, "<pid> <comm>" of a ptrace or kill target, or
// the mount point; Flags holds the open flags, mode, ioctl command, signal,
// ptrace mode, bpf command or mount kind.
//
// The programs run for every task on the host, so the kernel must have bpf
// in its active LSM list; [Open] proves that with a denied open before
// returning. Limits: files whose ancestry is deeper than 64 steps are
// denied; see [FilePolicy.Compile] for overlayfs.
type LSM struct {
	dir     string
	links   map[string]link.Link
	maps    map[string]*ebpf.Map
	loaded  bool
	slotDir string   // events.Maps.SlotDir
	use     *pin.Use // held on dir while the handle is open

	mu    sync.Mutex
	added map[uint64][]lsmSbxAllowKey
}

// lsmPinnedMaps are the maps Go uses after loading, pinned with the links.
var lsmPinnedMaps = []string{lsmMapSbxLsmSandboxes, lsmMapSbxLsmAllow, lsmMapSbxLsmSelftest}

// lsmEventMaps are the maps of events.h in lsm.c.
var lsmEventMaps = []string{lsmMapSbxEvents, lsmMapSbxDrops, lsmMapSbxUnrouted}

// lsmProbeOnly are the program and map only [Supported] loads.
var lsmProbeOnly = map[string]bool{lsmProgSbxProbeFileOpen: true, lsmMapSbxLsmProbe: true}

// Version names this build's program set (a hash of its object file):
// a verdict about whether the set loads holds for this version only.
func Version() string { return lsmVersion() }

// lsmVersion names the pin directory of this build's programs.
var lsmVersion = sync.OnceValue(func() string {
	sum := sha256.Sum256(_LsmBytes)
	return hex.EncodeToString(sum[:8])
})

// Open loads and attaches the LSM programs (or, with opts.PinRoot,
// reuses the pinned ones), then proves that they run and that their verdict
// is honoured: an open the programs must refuse is attempted and must fail
// with EACCES. opts may be nil. The error wraps [ErrRefused] when the
// kernel refuses LSM programs, [ErrInactive] when they attach but do not
// run (bpf missing from the active LSM list), and [bpf.ErrNotSupported] when
// the kernel lacks BPF LSM.
func Open(opts *Options) (*LSM, error) {
	if opts == nil {
		opts = &Options{}
	}
	if err := checkLSMList(); err != nil {
		return nil, fmt.Errorf("open lsm: %w", err)
	}
	l := &LSM{links: make(map[string]link.Link), maps: make(map[string]*ebpf.Map), added: make(map[uint64][]lsmSbxAllowKey)}
	if opts.Events != nil {
		if opts.Events.Events == nil || opts.Events.Drops == nil || opts.Events.Unrouted == nil {
			return nil, fmt.Errorf("open lsm: incomplete event maps")
		}
	}
	if opts.Events != nil {
		l.slotDir = opts.Events.SlotDir
	}
	if err := l.open(opts); err != nil {
		l.closeAll()
		return nil, fmt.Errorf("open lsm: %w", err)
	}
	if err := l.selfTest(); err != nil {
		l.closeAll()
		return nil, fmt.Errorf("open lsm: %w", err)
	}
	return l, nil
}

func (l *LSM) open(opts *Options) error {
	if opts.PinRoot == "" {
		return l.load(opts.Events)
	}
	events := "own"
	if opts.Events != nil {
		info, err := opts.Events.Events.Info()
		if err != nil {
			return fmt.Errorf("event maps: %w", err)
		}
		id, _ := info.ID()
		events = fmt.Sprintf("ev%d", id)
	}
	l.dir = filepath.Join(opts.PinRoot, fmt.Sprintf("lsm-%s-%s", lsmVersion(), events))
	if opts.Events == nil {
		// The pool's slot directories sit beside the pins.
		l.slotDir = l.dir
	}
	keep := filepath.Base(l.dir)
	if err := l.openPinned(opts.Events); err == nil {
		pin.SweepOthers(opts.PinRoot, "lsm-", keep)
		return nil
	}
	lock, err := pin.LockRoot(opts.PinRoot)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	if err := l.openPinned(opts.Events); err == nil {
		_ = pin.RemoveOthers(opts.PinRoot, "lsm-", keep)
		return nil
	}
	// A broken set of this build's pins goes; other builds' sets go unless
	// a run still holds them (they stay attached until it ends, and a
	// later open sweeps them).
	if err := pin.RemoveDir(l.dir); err != nil {
		return err
	}
	if err := pin.RemoveOthers(opts.PinRoot, "lsm-", keep); err != nil {
		return err
	}
	if err := l.load(opts.Events); err != nil {
		return err
	}
	if err := l.pin(opts.Events == nil); err != nil {
		return err
	}
	l.use, err = pin.Hold(l.dir)
	return err
}

// openPinned opens every pin in l.dir; missing or broken pins are an error.
func (l *LSM) openPinned(shared *events.Maps) (err error) {
	defer func() {
		if err != nil {
			l.closeAll()
		}
	}()
	if l.use, err = pin.Hold(l.dir); err != nil {
		return err
	}
	names := lsmPinnedMaps
	if shared == nil {
		names = append(append([]string(nil), names...), lsmEventMaps...)
	} else {
		l.setEventMaps(shared)
	}
	for _, name := range names {
		m, err := ebpf.LoadPinnedMap(filepath.Join(l.dir, name), nil)
		if err != nil {
			return err
		}
		l.maps[name] = m
	}
	if len(lsmProgNames()) == 0 {
		return errors.New("no programs in lsm.c")
	}
	for _, name := range lsmProgNames() {
		ln, err := link.LoadPinnedLink(filepath.Join(l.dir, "link_"+name), nil)
		if err != nil {
			return err
		}
		l.links[name] = ln
	}
	return nil
}

// setEventMaps records borrowed event maps (clones, so Close may close
// them).
func (l *LSM) setEventMaps(m *events.Maps) {
	for name, mp := range map[string]*ebpf.Map{lsmMapSbxEvents: m.Events, lsmMapSbxDrops: m.Drops, lsmMapSbxUnrouted: m.Unrouted} {
		if c, err := mp.Clone(); err == nil {
			l.maps[name] = c
		}
	}
}

// lsmProgNames are the enforcing programs of lsm.c (all but the probe).
var lsmProgNames = sync.OnceValue(func() []string {
	spec, err := loadLsm()
	if err != nil {
		return nil
	}
	var names []string
	for name := range spec.Programs {
		if !lsmProbeOnly[name] {
			names = append(names, name)
		}
	}
	return names
})

// load loads the programs (sharing shared's event maps, if set) and
// attaches them.
func (l *LSM) load(shared *events.Maps) error {
	if err := bpf.PrepareLoad(); err != nil {
		return err
	}
	spec, err := loadLsm()
	if err != nil {
		return err
	}
	for name := range lsmProbeOnly {
		delete(spec.Programs, name)
		delete(spec.Maps, name)
	}
	var copts ebpf.CollectionOptions
	if shared != nil {
		copts.MapReplacements = map[string]*ebpf.Map{
			lsmMapSbxEvents:   shared.Events,
			lsmMapSbxDrops:    shared.Drops,
			lsmMapSbxUnrouted: shared.Unrouted,
		}
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, copts)
	if err != nil {
		return belowFloor(loadError(err))
	}
	defer coll.Close()
	l.loaded = true
	for name, m := range coll.Maps {
		if c, err := m.Clone(); err == nil {
			l.maps[name] = c
		} else {
			return fmt.Errorf("map %s: %w", name, err)
		}
	}
	for name, prog := range coll.Programs {
		ln, err := link.AttachLSM(link.LSMOptions{Program: prog})
		if err != nil {
			return fmt.Errorf("attach %s: %w", name, loadError(err))
		}
		l.links[name] = ln
	}
	return nil
}

// pin pins the links and maps in l.dir.
func (l *LSM) pin(ownEvents bool) error {
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		return fmt.Errorf("create pin dir: %w", err)
	}
	names := lsmPinnedMaps
	if ownEvents {
		names = append(append([]string(nil), names...), lsmEventMaps...)
	}
	for _, name := range names {
		if err := l.maps[name].Pin(filepath.Join(l.dir, name)); err != nil {
			return fmt.Errorf("pin map %s: %w", name, err)
		}
	}
	for name, ln := range l.links {
		if err := ln.Pin(filepath.Join(l.dir, "link_"+name)); err != nil {
			return fmt.Errorf("pin link %s: %w", name, err)
		}
	}
	return nil
}

// selfTest proves the file_open program runs and is obeyed: an open of a
// temporary file by this process, registered in sbx_lsm_selftest, must fail
// with EACCES.
func (l *LSM) selfTest() error {
	f, err := os.CreateTemp("", "sbx-lsm-selftest-")
	if err != nil {
		return fmt.Errorf("self-test: %w", err)
	}
	name := f.Name()
	defer os.Remove(name)
	defer f.Close()
	mounts, err := mountDevices()
	if err != nil {
		return fmt.Errorf("self-test: %w", err)
	}
	r, err := compileRule(fileRule{path: name}, mounts)
	if err != nil {
		return fmt.Errorf("self-test: %w", err)
	}
	tgid := uint32(os.Getpid())
	m := l.maps[lsmMapSbxLsmSelftest]
	v := lsmSbxSelftest{Ino: r.Ino, Dev: r.Dev}
	if err := m.Put(tgid, &v); err != nil {
		return fmt.Errorf("self-test: %w", err)
	}
	defer m.Delete(tgid)
	fd, err := unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err == nil {
		unix.Close(fd)
	}
	if err := m.Lookup(tgid, &v); err != nil {
		return fmt.Errorf("self-test: %w", err)
	}
	switch {
	case v.Hits == 0:
		return fmt.Errorf("%w: the file_open program was attached but never ran (is bpf in the kernel's LSM list? boot with lsm=...,bpf)", ErrInactive)
	case !errors.Is(err, unix.EACCES):
		return fmt.Errorf("%w: the file_open program ran but its denial was not enforced (open returned %v, want EACCES)", ErrInactive, err)
	}
	return nil
}

// AddSandbox restricts the tasks of the cgroup2 directory whose id is
// cgroupID (bpf.CgroupID) and of every cgroup below it to policy, replacing
// any policy the sandbox had. From then on these tasks cannot mount, use
// bpf(2), or create sockets of any family but AF_UNIX, so register the
// sandbox after its init has set up its mounts and before the sandboxed
// program is executed (libcontainer: between Start and Exec), and make sure
// the program and what it loads are in policy. Events go to the ring
// registered for cgroupID in the event maps ([events.NewReader] with
// [LSM.EventMaps] or the shared maps).
func (l *LSM) AddSandbox(cgroupID uint64, policy FilePolicy) error {
	rules, err := policy.Compile()
	if err != nil {
		return fmt.Errorf("add sandbox %d: %w", cgroupID, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.removeLocked(cgroupID); err != nil {
		return fmt.Errorf("add sandbox %d: %w", cgroupID, err)
	}
	allow := l.maps[lsmMapSbxLsmAllow]
	var keys []lsmSbxAllowKey
	for _, r := range rules {
		k := r.key(cgroupID)
		if err := allow.Put(&k, r.access()); err != nil {
			for _, k := range keys {
				allow.Delete(&k)
			}
			return fmt.Errorf("add sandbox %d: allow %s: %w", cgroupID, r.Path, err)
		}
		keys = append(keys, k)
	}
	// The sandbox entry goes last: until then its tasks are unrestricted,
	// never restricted by a half-written policy.
	if err := l.maps[lsmMapSbxLsmSandboxes].Put(cgroupID, &lsmSbxNetPolicy{}); err != nil {
		for _, k := range keys {
			allow.Delete(&k)
		}
		return fmt.Errorf("add sandbox %d: %w", cgroupID, err)
	}
	l.added[cgroupID] = keys
	return nil
}

// AllowNet grants the sandbox registered as cgroupID (by [LSM.AddSandbox])
// the socket exceptions in p, as netwall.Wall.Allow does on the cgroup wall. With
// p.Proxy, its tasks may create TCP sockets of the proxy's family, connect
// them to exactly that address and port, and send on sockets connected
// there; every other socket use stays refused. With p.HostNetwork, the
// socket hooks allow everything (the run shares the host's network). With
// p.Loopback, inet (and NETLINK_ROUTE) sockets, binds, and connects and
// sends to loopback addresses on sockets of the task's own network
// namespace. Call it before the run's first task starts.
func (l *LSM) AllowNet(cgroupID uint64, p policy.WallRules) error {
	e, err := p.Compile()
	if err != nil {
		return err
	}
	// The same entry as the cgroup wall's (sbx_net.h); the LSM tier
	// compares a socket's namespace with the task's and ignores the cookie.
	v := lsmSbxNetPolicy{
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
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.added[cgroupID]; !ok {
		return fmt.Errorf("allow network for sandbox %d: not registered", cgroupID)
	}
	if err := l.maps[lsmMapSbxLsmSandboxes].Update(cgroupID, &v, ebpf.UpdateExist); err != nil {
		return fmt.Errorf("allow network for sandbox %d: %w", cgroupID, err)
	}
	return nil
}

// RemoveSandbox lifts the restrictions of the sandbox (at teardown, once
// its tasks are gone) and deletes its policy. Removing a sandbox that is not
// registered is not an error; one registered by another process (through
// pins) is removed too.
func (l *LSM) RemoveSandbox(cgroupID uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.removeLocked(cgroupID); err != nil {
		return fmt.Errorf("remove sandbox %d: %w", cgroupID, err)
	}
	return nil
}

func (l *LSM) removeLocked(cgroupID uint64) error {
	err := l.maps[lsmMapSbxLsmSandboxes].Delete(cgroupID)
	if err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return err
	}
	allow := l.maps[lsmMapSbxLsmAllow]
	keys, ok := l.added[cgroupID]
	if !ok {
		// Not added by this process: find its entries.
		var k lsmSbxAllowKey
		var v uint32
		it := allow.Iterate()
		for it.Next(&k, &v) {
			if k.Sandbox == cgroupID {
				keys = append(keys, k)
			}
		}
		if err := it.Err(); err != nil {
			return fmt.Errorf("list policy: %w", err)
		}
	}
	for _, k := range keys {
		if err := allow.Delete(&k); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("delete policy: %w", err)
		}
	}
	delete(l.added, cgroupID)
	return nil
}

// EventMaps returns the event routing maps the programs write to: the
// shared ones of [Options.Events], or the LSM's own.
func (l *LSM) EventMaps() events.Maps {
	return events.Maps{
		Events:   l.maps[lsmMapSbxEvents],
		Drops:    l.maps[lsmMapSbxDrops],
		Unrouted: l.maps[lsmMapSbxUnrouted],
		SlotDir:  l.slotDir,
	}
}

// Events registers a ring buffer for the sandbox whose cgroup id is
// cgroupID and returns its reader, as netwall.Wall.Events does. With shared event
// maps, use only one of the two for a run.
func (l *LSM) Events(cgroupID uint64) (*events.Reader, error) {
	return events.NewReader(l.EventMaps(), cgroupID)
}

// PinDir is the directory holding this LSM's pins, or "" without pins.
func (l *LSM) PinDir() string { return l.dir }

// Loaded reports whether this Open loaded the programs (cold) rather
// than reusing pins.
func (l *LSM) Loaded() bool { return l.loaded }

// Close releases this process's handles. Without pins the programs are
// detached and every sandbox loses its restrictions; with pins they stay.
func (l *LSM) Close() error {
	return l.closeAll()
}

// Unpin removes the pins, so the programs are detached once no process
// holds them open.
func (l *LSM) Unpin() error {
	if l.dir == "" {
		return nil
	}
	return pin.RemoveDir(l.dir)
}

func (l *LSM) closeAll() error {
	var errs []error
	for name, ln := range l.links {
		errs = append(errs, ln.Close())
		delete(l.links, name)
	}
	for name, m := range l.maps {
		errs = append(errs, m.Close())
		delete(l.maps, name)
	}
	l.use.Release()
	l.use = nil
	return errors.Join(errs...)
}
