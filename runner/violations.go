package runner

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/sbx-sandbox/sbx/bpf"
	"github.com/sbx-sandbox/sbx/gate"
)

// maxViolationLines bounds the "sbx: denied" lines printed per run; the
// rest are counted and summarized at exit.
const maxViolationLines = 20

// reporter turns denial events into what the user sees: one deduplicated
// "sbx: denied ..." line per distinct operation on stderr (at most
// maxViolationLines), JSON lines for --violations, and the list kept for
// sbx exec's result.
type reporter struct {
	mu      sync.Mutex
	log     io.Writer // stderr lines; nil: none
	jsonl   io.Writer // --violations file; nil: none
	enc     *json.Encoder
	seen    map[string]int
	order   []string
	printed int
	total   int
	kept    []gate.Violation
	dropped int
	// deferLines holds the stderr lines until the run ends: when stderr is
	// not a terminal it is often parsed, and a line written while the
	// program is in the middle of one of its own would mangle both.
	deferLines bool
	pending    []string

	// Set by setSandbox once the sandbox exists.
	shimPID   uint32     // the sandbox's PID 1, sbx's own shim
	mounts    mountTable // the sandbox's mounts (see crossMount)
	workspace string
	readOnly  bool // the workspace is mounted read-only (no --write)
	hinted    bool // the --write hint was given

	// lastFile is the last LSM file event of each pid, to leave out the
	// tracer's report of the same refusal (see pump).
	lastFile map[uint32]bpf.Event
}

func newReporter(log, jsonl io.Writer) *reporter {
	r := &reporter{log: log, jsonl: jsonl, seen: map[string]int{}}
	if f, ok := log.(interface{ Fd() uintptr }); !ok || !term.IsTerminal(int(f.Fd())) {
		r.deferLines = true
	}
	if jsonl != nil {
		r.enc = json.NewEncoder(jsonl)
		r.enc.SetEscapeHTML(false)
	}
	return r
}

// setSandbox tells the reporter about the sandbox: the pid of its shim
// (whose own refusals, such as the Landlock canary's, are sbx's and not
// reported), and the workspace, for the --write hint.
func (r *reporter) setSandbox(shimPID int, workspace string, write bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.shimPID, r.workspace, r.readOnly = uint32(shimPID), workspace, !write
}

// readMounts keeps the mount table of the sandbox whose PID 1 is shimPID,
// for telling the tracer's EXDEV events apart after the sandbox has gone
// (see crossMount). Called before the program starts, when the table is
// final; runs without the tracer (rootless) need not pay for it.
func (r *reporter) readMounts(shimPID int) {
	mounts, err := readMountTable(shimPID)
	if err != nil {
		// Only the classification of EXDEV after the run suffers.
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mounts = mounts
}

// writeHint is printed once, after the first refused write under a
// read-only workspace.
const writeHint = "sbx: the workspace is mounted read-only; run sbx with --write to let the program change it\n"

// violation converts a BPF event; tier is used unless the event names its
// own (the tracer's do).
func violation(e bpf.Event, tier string) gate.Violation {
	if e.Tier != "" {
		tier = e.Tier
	}
	return gate.Violation{
		Time:   e.Time,
		Pid:    int(e.PID),
		Comm:   e.Comm,
		Op:     e.OpName(),
		Target: e.Target(),
		Errno:  unix.ErrnoName(e.Errno),
		Tier:   tier,
	}
}

func (r *reporter) add(v gate.Violation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addLocked(v)
}

// addEvent reports a BPF event, leaving out what is not the program's
// (the shim's own refusals), no denial (a rename across mounts) or
// reported already: a refusal of the LSM tier
// is seen by the tracer too when the syscall returns, right after the LSM
// program's event for the same process and errno.
func (r *reporter) addEvent(e bpf.Event, tier string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.Op != bpf.OpSyscall {
		if e.PID == r.shimPID && r.shimPID != 0 {
			return // the shim's own: its BPF LSM canary
		}
		if e.Op >= bpf.OpFileOpen { // the LSM tier's
			if r.lastFile == nil {
				r.lastFile = map[uint32]bpf.Event{}
			}
			r.lastFile[e.PID] = e
		}
		r.addLocked(violation(e, tier))
		return
	}
	if (e.PID == r.shimPID && r.shimPID != 0) || crossMount(r.shimPID, r.mounts, e) {
		return
	}
	if last, ok := r.lastFile[e.PID]; ok {
		delete(r.lastFile, e.PID)
		if last.Errno == e.Errno {
			return
		}
	}
	v := violation(e, tier)
	r.addLocked(v)
	if r.readOnly && !r.hinted && e.Errno == unix.EROFS && e.IsWrite() && within(e.Path, r.workspace) {
		r.hinted = true
		r.emit(writeHint)
	}
}

func (r *reporter) addLocked(v gate.Violation) {
	r.total++
	if len(r.kept) < gate.MaxViolations {
		r.kept = append(r.kept, v)
	} else {
		r.dropped++
	}
	if r.enc != nil {
		_ = r.enc.Encode(v)
	}
	key := v.Op + " " + v.Target
	r.seen[key]++
	if r.seen[key] > 1 {
		return
	}
	r.order = append(r.order, key)
	if r.log == nil || r.printed >= maxViolationLines {
		return
	}
	r.printed++
	detail := fmt.Sprintf("%d %s", v.Pid, v.Comm)
	if v.Reason != "" {
		detail = v.Reason
	}
	r.emit(fmt.Sprintf("sbx: denied %s %s (%s)\n", v.Op, v.Target, detail))
}

// emit writes one line to the log now, or at the end of the run (see
// deferLines).
func (r *reporter) emit(line string) {
	if r.log == nil {
		return
	}
	if r.deferLines {
		r.pending = append(r.pending, line)
		return
	}
	io.WriteString(r.log, line)
}

// finish prints the summary line: how many denials there were in all.
func (r *reporter) finish() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.log == nil || r.total == 0 {
		return
	}
	for _, line := range r.pending {
		io.WriteString(r.log, line)
	}
	r.pending = nil
	if hidden := len(r.order) - r.printed; hidden > 0 || r.total > r.printed {
		fmt.Fprintf(r.log, "sbx: %d operation(s) denied in all (%d distinct)\n", r.total, len(r.order))
	}
}

// violations returns what the run's result reports.
func (r *reporter) violations() ([]gate.Violation, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]gate.Violation(nil), r.kept...), r.dropped
}

// pump reads events until the reader's deadline passes or it is closed.
func (r *reporter) pump(er *bpf.EventReader, tier string, done chan<- struct{}) {
	defer close(done)
	canaries := bpf.CanaryEvents
	for {
		e, err := er.Read()
		if err != nil {
			return
		}
		if canaries > 0 && e.IsCanary() {
			canaries--
			continue
		}
		r.addEvent(e, tier)
	}
}

// drain makes the reader return what is already queued, then stop.
func drain(er *bpf.EventReader, done <-chan struct{}) {
	_ = er.Flush()
	select {
	case <-done:
	case <-time.After(time.Second):
	}
}
