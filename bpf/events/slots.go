package events

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// ErrNoFreeRing is returned when every ring of the pool is held by a
// running sandbox. The walls do not depend on rings: a run without one is
// enforced all the same, its denials only counted ([Unrouted]).
var ErrNoFreeRing = errors.New("every event ring is taken by running sandboxes")

// slot is one ring of the pool, held by one Reader.
type slot struct {
	index   uint32
	ring    *ebpf.Map
	release func() error
}

// claimSlot takes a free slot of the pool in maps, growing the pool (one
// slot at a time) when every existing slot is taken.
func claimSlot(maps Maps) (*slot, error) {
	if maps.Events == nil || maps.Drops == nil {
		return nil, errors.New("event maps not set")
	}
	if maps.SlotDir == "" {
		return claimPrivateSlot(maps.Events)
	}
	return claimPinnedSlot(maps.Events, maps.SlotDir)
}

func slotDir(dir string, i uint32) string { return filepath.Join(dir, fmt.Sprintf("slot_%d", i)) }

// claimPinnedSlot takes a slot whose pin directory it can flock. The lock
// lives as long as the returned slot (or the process) does; the first owner
// of a slot creates its ring, installs and pins it.
func claimPinnedSlot(events *ebpf.Map, dir string) (*slot, error) {
	n := events.MaxEntries()
	// Again while other processes take the slots we found free, or create
	// the one we wanted to create: many runs starting at once race here.
	for attempt := 0; attempt < 16; attempt++ {
		missing := -1
		for i := uint32(0); i < n; i++ {
			s, err := lockPinnedSlot(events, dir, i)
			if errors.Is(err, os.ErrNotExist) {
				if missing < 0 {
					missing = int(i)
				}
				continue
			}
			if errors.Is(err, unix.EWOULDBLOCK) {
				continue
			}
			if err != nil {
				return nil, err
			}
			return s, nil
		}
		if missing < 0 {
			return nil, fmt.Errorf("%w (all %d)", ErrNoFreeRing, n)
		}
		if err := os.Mkdir(slotDir(dir, uint32(missing)), 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("create ring slot: %w", err)
		}
		s, err := lockPinnedSlot(events, dir, uint32(missing))
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w (the pool kept changing under concurrent starts)", ErrNoFreeRing)
}

// lockPinnedSlot locks slot i's directory without waiting (EWOULDBLOCK if
// taken, ErrNotExist if there is none) and makes sure its ring exists and is
// installed.
func lockPinnedSlot(events *ebpf.Map, dir string, i uint32) (_ *slot, err error) {
	d := slotDir(dir, i)
	fd, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: d, Err: err}
	}
	for {
		err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		if err == unix.EWOULDBLOCK {
			return nil, err
		}
		return nil, fmt.Errorf("lock ring slot %d: %w", i, err)
	}
	defer func() {
		if err != nil {
			unix.Close(fd)
		}
	}()
	pin := filepath.Join(d, "ring")
	ring, err := ebpf.LoadPinnedMap(pin, nil)
	if errors.Is(err, os.ErrNotExist) {
		if ring, err = newRing(); err == nil {
			if err = ring.Pin(pin); err != nil {
				ring.Close()
				err = fmt.Errorf("pin ring: %w", err)
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("ring slot %d: %w", i, err)
	}
	if err := installRing(events, i, ring); err != nil {
		ring.Close()
		return nil, err
	}
	return &slot{index: i, ring: ring, release: func() error {
		err := ring.Close()
		unix.Close(fd)
		return err
	}}, nil
}

// privatePools hand out the slots of event maps that are private to this
// process (no SlotDir), by the ID of their sbx_events map.
var privatePools struct {
	sync.Mutex
	m map[ebpf.MapID]*privatePool
}

type privatePool struct {
	rings []*ebpf.Map // created on first use, kept for the process's life
	taken []bool
}

func claimPrivateSlot(events *ebpf.Map) (*slot, error) {
	info, err := events.Info()
	if err != nil {
		return nil, fmt.Errorf("event map info: %w", err)
	}
	id, _ := info.ID()
	privatePools.Lock()
	defer privatePools.Unlock()
	if privatePools.m == nil {
		privatePools.m = make(map[ebpf.MapID]*privatePool)
	}
	p := privatePools.m[id]
	if p == nil {
		n := events.MaxEntries()
		p = &privatePool{rings: make([]*ebpf.Map, n), taken: make([]bool, n)}
		privatePools.m[id] = p
	}
	for i := range p.taken {
		if p.taken[i] {
			continue
		}
		if p.rings[i] == nil {
			ring, err := newRing()
			if err != nil {
				return nil, err
			}
			if err := installRing(events, uint32(i), ring); err != nil {
				ring.Close()
				return nil, err
			}
			p.rings[i] = ring
		}
		p.taken[i] = true
		return &slot{index: uint32(i), ring: p.rings[i], release: func() error {
			privatePools.Lock()
			p.taken[i] = false
			privatePools.Unlock()
			return nil
		}}, nil
	}
	return nil, fmt.Errorf("%w (all %d)", ErrNoFreeRing, len(p.taken))
}
