package events

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
)

// ringSize is SBX_RING_SIZE in events.h (a test checks it against the
// inner map of sbx_events).
const ringSize = 256 << 10

// Maps are the maps of events.h through which programs route events to
// the runs' ring buffers, plus where the pool's rings are pinned.
type Maps struct {
	Events   *ebpf.Map // sbx_events: slot -> ring buffer (the pool)
	Drops    *ebpf.Map // sbx_drops: run cgroup id -> struct sbx_run (slot, lost events)
	Unrouted *ebpf.Map // sbx_unrouted: [0] events of runs without a ring
	// SlotDir is the bpffs directory holding one subdirectory per pool
	// slot: the slot's ring pin, and the directory's flock, which marks the
	// slot as taken (released by the kernel if the owner dies). Leave it
	// empty only for maps private to this process: slots are then handed
	// out in-process. Copy it along with the maps when sharing them.
	SlotDir string
}

// Reader reads the denials of one run from a ring buffer of the pool
// that it holds while open. Read and Close may be called from different
// goroutines.
type Reader struct {
	drops   *ebpf.Map // sbx_drops
	id      uint64
	slot    *slot
	rd      *ringbuf.Reader
	running bool // registered in sbx_drops
	closed  bool // Close has run
}

// Slot is the index of the pool ring the reader holds (the key of the
// sbx_events map); ok is false once Close has given it back.
func (r *Reader) Slot() (slot uint32, ok bool) {
	if r.slot == nil {
		return 0, false
	}
	return r.slot.index, true
}

// NewReader takes a free ring of the pool in maps, registers it for
// the run whose cgroup id is cgroupID, and returns its reader. It fails if
// the run already has one, or if every ring of the pool is taken (runs of
// other sbx processes hold theirs until they end). Register before the
// run's first task starts: events of a run without a ring are only counted
// ([Unrouted]). Taking a ring costs well under a millisecond, except the
// first use of each slot since boot (the pool grows: ~10 ms, see events.h).
func NewReader(maps Maps, cgroupID uint64) (*Reader, error) {
	s, err := claimSlot(maps)
	if err != nil {
		return nil, fmt.Errorf("event reader for run %d: %w", cgroupID, err)
	}
	r := &Reader{id: cgroupID, slot: s}
	// Our own handle, so the reader outlives a Close of the maps' owner.
	if r.drops, err = maps.Drops.Clone(); err != nil {
		r.Close()
		return nil, fmt.Errorf("event reader for run %d: %w", cgroupID, err)
	}
	if r.rd, err = ringbuf.NewReader(s.ring); err != nil {
		r.Close()
		return nil, fmt.Errorf("event reader for run %d: read ring: %w", cgroupID, err)
	}
	// Records a previous owner of the ring left unread are not ours.
	r.rd.SetDeadline(time.Now())
	for {
		if _, err := r.rd.Read(); err != nil {
			break
		}
	}
	r.rd.SetDeadline(time.Time{})
	if err := forgetSlot(r.drops, s.index); err != nil {
		r.Close()
		return nil, fmt.Errorf("event reader for run %d: %w", cgroupID, err)
	}
	v := eventsSbxRun{Slot: s.index}
	if err := r.drops.Update(cgroupID, &v, ebpf.UpdateNoExist); err != nil {
		r.Close()
		if errors.Is(err, ebpf.ErrKeyExist) {
			return nil, fmt.Errorf("event reader for run %d: the run already has one", cgroupID)
		}
		return nil, fmt.Errorf("event reader for run %d: register: %w", cgroupID, err)
	}
	r.running = true
	return r, nil
}

// forgetSlot removes registrations that still name slot: left by an owner
// that died without closing its reader. The caller holds the slot, so no
// live run uses it.
func forgetSlot(drops *ebpf.Map, slot uint32) error {
	var (
		id    uint64
		v     eventsSbxRun
		stale []uint64
	)
	it := drops.Iterate()
	for it.Next(&id, &v) {
		if v.Slot == slot {
			stale = append(stale, id)
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("list runs: %w", err)
	}
	for _, id := range stale {
		if err := drops.Delete(id); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("forget stale run %d: %w", id, err)
		}
	}
	return nil
}

// Read blocks until the next event of the run, the deadline
// ([Reader.SetDeadline]; os.ErrDeadlineExceeded once the ring is empty)
// or Close (os.ErrClosed). To drain at teardown, once the run's tasks are
// gone: SetDeadline(time.Now()) and Read until os.ErrDeadlineExceeded.
func (r *Reader) Read() (Event, error) {
	if r.rd == nil {
		return Event{}, os.ErrClosed
	}
	for {
		rec, err := r.rd.Read()
		if err != nil {
			return Event{}, err
		}
		e, err := DecodeEvent(rec.RawSample)
		// A program that looked up the ring's previous owner just before
		// it left may still have written to the ring: skip such events.
		if err != nil || e.CgroupID == r.id {
			return e, err
		}
	}
}

// SetDeadline sets when Read stops waiting; the zero time means never.
func (r *Reader) SetDeadline(t time.Time) { r.rd.SetDeadline(t) }

// Flush makes a Read blocked in another goroutine, and the Reads after it,
// return the events already queued and then an error wrapping
// ringbuf.ErrFlushed. Unlike SetDeadline it is safe to call while Read
// blocks.
func (r *Reader) Flush() error { return r.rd.Flush() }

// Dropped is how many of the run's events were lost because its ring was
// full.
func (r *Reader) Dropped() (uint64, error) {
	if r.drops == nil {
		return 0, fmt.Errorf("dropped events of run %d: %w", r.id, os.ErrClosed)
	}
	var v eventsSbxRun
	if err := r.drops.Lookup(r.id, &v); err != nil {
		return 0, fmt.Errorf("dropped events of run %d: %w", r.id, err)
	}
	return v.Drops, nil
}

// Close unregisters the run (its later events are only counted), interrupts
// a blocked Read and gives the ring back to the pool.
func (r *Reader) Close() error {
	var errs []error
	if r.running {
		if err := r.drops.Delete(r.id); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			errs = append(errs, fmt.Errorf("unregister run %d: %w", r.id, err))
		}
		r.running = false
	}
	if r.drops != nil {
		errs = append(errs, r.drops.Close())
		r.drops = nil
	}
	if r.rd != nil && !r.closed {
		// r.rd stays: a Read after (or during) Close gets os.ErrClosed
		// from it.
		errs = append(errs, r.rd.Close())
	}
	r.closed = true
	if r.slot != nil {
		errs = append(errs, r.slot.release())
		r.slot = nil
	}
	return errors.Join(errs...)
}

// Unrouted is how many events of runs without a registered ring the programs
// using maps have counted since they were loaded (summed over all runs).
func Unrouted(maps Maps) (uint64, error) {
	var n uint64
	if err := maps.Unrouted.Lookup(uint32(0), &n); err != nil {
		return 0, fmt.Errorf("unrouted events: %w", err)
	}
	return n, nil
}

// newRing creates a ring buffer that fits the pool's slots.
func newRing() (*ebpf.Map, error) {
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: "sbx_ring", Type: ebpf.RingBuf, MaxEntries: ringSize})
	if err != nil {
		return nil, fmt.Errorf("create ring: %w", err)
	}
	return m, nil
}

// installRing puts ring into slot index of the pool unless it is there
// already. Putting waits for an RCU grace period, so it is done once per
// slot.
func installRing(events *ebpf.Map, index uint32, ring *ebpf.Map) error {
	info, err := ring.Info()
	if err != nil {
		return fmt.Errorf("ring info: %w", err)
	}
	want, _ := info.ID()
	var have ebpf.MapID
	err = events.Lookup(index, &have)
	if err == nil && have == want {
		return nil
	}
	if err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		return fmt.Errorf("look up ring slot %d: %w", index, err)
	}
	if err := events.Put(index, ring); err != nil {
		return fmt.Errorf("install ring in slot %d: %w", index, err)
	}
	return nil
}
