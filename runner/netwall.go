package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sbx-sandbox/sbx/bpf/events"
	"github.com/sbx-sandbox/sbx/bpf/netwall"
	"github.com/sbx-sandbox/sbx/bpf/pin"
	"github.com/sbx-sandbox/sbx/internal/cgroup2"
	"github.com/sbx-sandbox/sbx/report"
	"github.com/sbx-sandbox/sbx/sandbox"
)

// netWall is one run's use of the cgroup BPF network wall: programs loaded
// once and pinned, attached to the parent cgroup every sandbox of this sbx
// build is created under (<cgroup2>/sbx/<netwall.WallID>), so that a
// sandbox is walled in from its first instruction, and only by this
// build's wall.
type netWall struct {
	parent  string // the cgroup2 directory every sandbox of this build is created under
	net     *netwall.Wall
	events  *events.Reader
	done    chan struct{}
	allowed uint64 // cgroup id granted exceptions by allow, revoked by close
}

// openNetWall loads (or reuses) the wall for this build's sandbox parent
// cgroup.
func openNetWall() (*netWall, error) {
	if err := pin.Mount(); err != nil {
		return nil, fmt.Errorf("network wall (cgroup BPF): %w", err)
	}
	root, err := cgroup2.Mount()
	if err != nil {
		return nil, fmt.Errorf("network wall (cgroup BPF): %w", err)
	}
	parent := filepath.Join(root, sandbox.CgroupParent, netwall.WallID())
	var n *netwall.Wall
	for try := 0; ; try++ {
		if err := os.MkdirAll(parent, 0o755); err != nil {
			return nil, fmt.Errorf("network wall (cgroup BPF): create parent cgroup: %w", err)
		}
		// An sbx from before wall groups sweeps an empty <sbx>/<name>
		// older than a minute as a stale run cgroup: keep this one
		// young while it is used, so that it is never swept between
		// this open and the run's cgroup.
		now := time.Now()
		_ = os.Chtimes(parent, now, now)
		n, err = netwall.Open(parent, nil)
		if err == nil {
			break
		}
		// Another build's sbx removes this build's parent when no pins
		// name it: between the mkdir and the first load, that is this
		// one. Create it again, once.
		if try > 0 || !errors.Is(err, netwall.ErrParentGone) {
			return nil, fmt.Errorf("network wall (cgroup BPF): %w", err)
		}
	}
	return &netWall{parent: parent, net: n}, nil
}

// watch starts reading the denials of the sandbox whose cgroup id is id.
func (w *netWall) watch(id uint64, rep *report.Reporter) error {
	er, err := w.net.Events(id)
	if errors.Is(err, events.ErrNoFreeRing) {
		// Reporting is not a protection: the run goes ahead, walled.
		rep.Degraded(err)
		return nil
	}
	if err != nil {
		return fmt.Errorf("network wall: read denials: %w", err)
	}
	w.events = er
	w.done = make(chan struct{})
	go rep.Pump(er, "bpf", w.done)
	return nil
}

// allow grants the sandbox whose cgroup id is id the exceptions in p (the
// egress proxy's endpoint, or the host network); close revokes them.
func (w *netWall) allow(id uint64, p netwall.Policy) error {
	if err := w.net.Allow(id, p); err != nil {
		return fmt.Errorf("network wall: %w", err)
	}
	w.allowed = id
	return nil
}

// checkForeign refuses a run that needs an exception of the wall (p not
// zero) while another wall is attached to this build's parent cgroup or
// one above it: in practice an sbx build from before per-build parents,
// whose wall sits on the shared sbx cgroup itself. Its programs refuse
// every inet socket of runs they do not know, so the run would fail in
// confusing ways (its canary first). Fail closed, with the cause and the
// way out. Other builds with per-build parents never get here: their
// walls are on sibling cgroups and never see this build's runs.
func (w *netWall) checkForeign(p netwall.Policy) error {
	if p.IsZero() {
		return nil
	}
	dir, err := w.net.ForeignSockCreate()
	if err != nil {
		return fmt.Errorf("network wall: %w", err)
	}
	if dir != "" {
		return fmt.Errorf("network wall: another sbx version's network wall is attached to the cgroup %s, which holds this version's runs (an sbx from before per-build wall cgroups, whose runs are still going); it refuses every socket of this version's runs, so --net loopback, --allow-host and --net host cannot work until those runs end (--net none works meanwhile)", dir)
	}
	return nil
}

// close drains the denials still queued, revokes the run's exceptions and
// releases the wall (the pinned programs stay attached for the next run).
func (w *netWall) close() {
	if w.allowed != 0 {
		// The run's cgroup is gone by now; a failure only leaves a
		// stale entry that no task can match (ids are not reused).
		_ = w.net.Revoke(w.allowed)
	}
	if w.events != nil {
		report.Drain(w.events, w.done)
		w.events.Close()
	}
	w.net.Close()
}
