package tracer

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/bpf"
	"github.com/sbx-sandbox/sbx/bpf/events"
	"github.com/sbx-sandbox/sbx/bpf/pin"
)

// Options tune [Open]. The zero value is what sbx uses.
type Options struct {
	// PinRoot is the bpffs directory holding the pins ([pin.DefaultRoot] if
	// empty). Loading a fresh tracer removes every other "trace-*"
	// directory in it that no run uses (older versions, or event maps
	// that were replaced); one in use stays until its last run ends.
	PinRoot string
}

// Tracer is the denial tracer (trace.c): a tp_btf program on sys_exit that
// reports the refusals of Landlock, seccomp and the read-only mounts to the
// runs' event rings. It is loaded once and pinned (<pin root>/trace-<object
// hash>-<parent cgroup id>-ev<events map id>/prog), but attached only while
// some run uses it ([Tracer.Acquire]): attached, it is called on every
// syscall of the host.
type Tracer struct {
	dir     string
	pinRoot string
	prog    *ebpf.Program
	loaded  bool
}

// traceVersion names this build's pin directory (as netwall's netVersion does): the
// program and the syscall table it is loaded with, so that a build that
// only changes the table does not reuse a pinned program with the old one.
var traceVersion = sync.OnceValue(func() string {
	h := sha256.New()
	h.Write(_TraceBytes)
	table := events.TracedSyscalls()
	for _, nr := range slices.Sorted(maps.Keys(table)) {
		fmt.Fprintf(h, "%d %+v\n", nr, table[nr].Sys)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
})

// Open returns the tracer for the run cgroups under parentCgroup (a
// cgroup2 directory, not the root), writing into events (those of the
// network wall, [netwall.Wall.EventMaps]). It reuses the pinned program when there
// is one and otherwise loads and pins it. opts may be nil. The error wraps
// [bpf.ErrNotSupported] when the kernel cannot run it.
func Open(parentCgroup string, ev events.Maps, opts *Options) (*Tracer, error) {
	if len(events.TracedSyscalls()) == 0 {
		return nil, fmt.Errorf("open denial tracer: %w: syscall decoding is written for x86_64 only", bpf.ErrNotSupported)
	}
	if ev.Events == nil || ev.Drops == nil || ev.Unrouted == nil {
		return nil, errors.New("open denial tracer: incomplete event maps")
	}
	pinRoot := pin.DefaultRoot
	if opts != nil && opts.PinRoot != "" {
		pinRoot = opts.PinRoot
	}
	if err := bpf.PrepareLoad(); err != nil {
		return nil, fmt.Errorf("open denial tracer: %w", err)
	}
	parent, err := bpf.CleanAbs(parentCgroup)
	if err != nil {
		return nil, fmt.Errorf("open denial tracer: %w", err)
	}
	root, err := bpf.Cgroup2RootOf(parent)
	if err != nil {
		return nil, fmt.Errorf("open denial tracer: %w", err)
	}
	rel, err := filepath.Rel(root, parent)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return nil, fmt.Errorf("open denial tracer: parent cgroup %s is not below the cgroup2 root %s", parent, root)
	}
	parentID, err := bpf.CgroupID(parent)
	if err != nil {
		return nil, fmt.Errorf("open denial tracer: %w", err)
	}
	info, err := ev.Events.Info()
	if err != nil {
		return nil, fmt.Errorf("open denial tracer: event maps: %w", err)
	}
	evID, _ := info.ID()
	t := &Tracer{pinRoot: pinRoot}
	t.dir = filepath.Join(pinRoot, fmt.Sprintf("trace-%s-%d-ev%d", traceVersion(), parentID, evID))

	if t.prog, err = ebpf.LoadPinnedProgram(filepath.Join(t.dir, "prog"), nil); err == nil {
		return t, nil
	}
	lock, err := pin.LockRoot(pinRoot)
	if err != nil {
		return nil, fmt.Errorf("open denial tracer: %w", err)
	}
	defer lock.Unlock()
	if t.prog, err = ebpf.LoadPinnedProgram(filepath.Join(t.dir, "prog"), nil); err == nil {
		return t, nil
	}
	// Other tracers' pins go only when no run uses them: as for the
	// wall's and the LSM tier's pins (pin.RemoveOthers). Removing one in use
	// made its build load and attach a second copy at its next run, which
	// then reported each denial of the runs still using the first twice.
	if err := pin.RemoveOthers(pinRoot, "trace-", filepath.Base(t.dir)); err != nil {
		return nil, fmt.Errorf("open denial tracer: %w", err)
	}
	level := uint32(len(strings.Split(rel, string(filepath.Separator))))
	prog, err := loadTraceProgram(parentID, level, &ev)
	if err != nil {
		return nil, fmt.Errorf("open denial tracer: %w", err)
	}
	if err := os.Mkdir(t.dir, 0o700); err != nil {
		prog.Close()
		return nil, fmt.Errorf("open denial tracer: create pin dir: %w", err)
	}
	if err := prog.Pin(filepath.Join(t.dir, "prog")); err != nil {
		prog.Close()
		_ = pin.RemoveDir(t.dir)
		return nil, fmt.Errorf("open denial tracer: pin: %w", err)
	}
	t.prog, t.loaded = prog, true
	return t, nil
}

// loadTraceProgram loads and verifies trace.c for the parent cgroup parentID at
// cgroup level level, writing into events (its own maps if nil), and fills
// its syscall table.
func loadTraceProgram(parentID uint64, level uint32, ev *events.Maps) (*ebpf.Program, error) {
	spec, err := loadTrace()
	if err != nil {
		return nil, err
	}
	if err := spec.Variables["sbx_parent_id"].Set(parentID); err != nil {
		return nil, fmt.Errorf("set parent: %w", err)
	}
	if err := spec.Variables["sbx_parent_level"].Set(level); err != nil {
		return nil, fmt.Errorf("set parent level: %w", err)
	}
	var copts ebpf.CollectionOptions
	if ev != nil {
		copts.MapReplacements = map[string]*ebpf.Map{
			traceMapSbxEvents:   ev.Events,
			traceMapSbxDrops:    ev.Drops,
			traceMapSbxUnrouted: ev.Unrouted,
		}
	}
	var objs traceObjects
	if err := spec.LoadAndAssign(&objs, &copts); err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) || errors.Is(err, bpf.ErrNotSupported) {
			return nil, fmt.Errorf("load program: %w", err)
		}
		if errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("load program: %w (needs root: CAP_BPF, CAP_PERFMON; or the kernel refuses tp_btf programs)", err)
		}
		return nil, fmt.Errorf("load program: %w (needs BTF: CONFIG_DEBUG_INFO_BTF)", err)
	}
	defer func() {
		objs.SbxTraceSyscalls.Close()
		objs.SbxTraceScratch.Close()
		if ev == nil {
			objs.SbxEvents.Close()
			objs.SbxDrops.Close()
			objs.SbxUnrouted.Close()
		}
	}()
	for nr, s := range events.TracedSyscalls() {
		if err := objs.SbxTraceSyscalls.Put(nr, s.Sys); err != nil {
			objs.SbxSysExit.Close()
			return nil, fmt.Errorf("fill syscall table (%s): %w", s.Name, err)
		}
	}
	return objs.SbxSysExit, nil
}

// Supported loads the tracer with private maps and attaches it for a
// moment, to tell whether this kernel can run it; nil if it can.
func Supported() error {
	if len(events.TracedSyscalls()) == 0 {
		return fmt.Errorf("%w: syscall decoding is written for x86_64 only", bpf.ErrNotSupported)
	}
	prog, err := loadTraceProgram(0, 1, nil)
	if err != nil {
		return err
	}
	defer prog.Close()
	l, err := link.AttachTracing(link.TracingOptions{Program: prog, AttachType: ebpf.AttachTraceRawTp})
	if err != nil {
		return fmt.Errorf("attach to sys_exit: %w", err)
	}
	return l.Close()
}

// Close releases the handle; the pinned program stays.
func (t *Tracer) Close() error {
	if t.prog == nil {
		return nil
	}
	err := t.prog.Close()
	t.prog = nil
	if err != nil {
		return fmt.Errorf("close denial tracer: %w", err)
	}
	return nil
}

// Unpin removes the tracer's pins (tests). Runs using it keep their link.
func (t *Tracer) Unpin() error { return pin.RemoveDir(t.dir) }

// PinDir is the bpffs directory holding the tracer's pins.
func (t *Tracer) PinDir() string { return t.dir }

// Loaded reports whether this Open loaded the program (cold).
func (t *Tracer) Loaded() bool { return t.loaded }
