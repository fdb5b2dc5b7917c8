package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"github.com/sbx-sandbox/sbx/bpf/events"
	"github.com/sbx-sandbox/sbx/canary"
	"github.com/sbx-sandbox/sbx/egress"
	"github.com/sbx-sandbox/sbx/hostfs"
	"github.com/sbx-sandbox/sbx/internal/safetext"
)

// maxViolationLines bounds the "sbx: denied" lines printed per run; the
// rest are counted and summarized at exit.
const maxViolationLines = 20

// What a flood of denials may cost sbx, which runs outside the sandbox's
// limits: before these bounds, tens of thousands of distinct denials a
// second grew sbx by hundreds of MB and wrote --violations at MB/s.
const (
	// maxDistinct bounds the distinct operations (op and target) told
	// apart for the summary; past it, denials are counted by kind.
	maxDistinct = 1000
	// violationsPerSecond bounds the records written to --violations in
	// each second; the rest are summed up in a "dropped" record.
	violationsPerSecond = 1000
	// eventsPerSecond bounds the denial events read and decoded each
	// second. Past it the pump pauses: the run's event ring fills and the
	// kernel counts what it cannot queue (reported as lost).
	eventsPerSecond = 10000
	// pumpWindow is the window of eventsPerSecond: short, so that a
	// paused pump still drains within drain's second.
	pumpWindow = 100 * time.Millisecond
)

// DroppedOp is the op of the --violations record that stands for records
// left out (see droppedRecord).
const DroppedOp = "dropped"

// droppedRecord is the --violations line written in place of the denials
// left out: past violationsPerSecond (at most one such line a second, and
// one at the end of the run), or lost because the event ring was full.
type droppedRecord struct {
	Time time.Time `json:"time"`
	Op   string    `json:"op"` // DroppedOp
	// Count is how many denials this record stands for.
	Count int `json:"count"`
	// Since is when the first of them was seen.
	Since time.Time `json:"since,omitzero"`
	// Kinds counts them by "op/tier" (those that were read; lost ones
	// have no kind).
	Kinds map[string]int `json:"kinds,omitempty"`
	// Lost is how many of Count the kernel dropped because the event ring
	// was full (only in the record at the end of the run).
	Lost uint64 `json:"lost,omitempty"`
	// Reason says why they were left out.
	Reason string `json:"reason"`
}

// dropCount collects denials left out of --violations.
type dropCount struct {
	n     int
	since time.Time
	kinds map[string]int
}

func (d *dropCount) Add(v Violation, now time.Time) {
	if d.n == 0 {
		d.since = now
		d.kinds = map[string]int{}
	}
	d.n++
	d.kinds[kind(v)]++ // bounded: ops times tiers
}

// kind is how denials past the bounds are told apart: "open/mount".
func kind(v Violation) string { return v.Op + "/" + v.Tier }

// Reporter turns denial events into what the user sees: one deduplicated
// "sbx: denied ..." line per distinct operation on stderr (at most
// maxViolationLines), JSON lines for --violations, and the list kept for
// sbx exec's result.
type Reporter struct {
	mu      sync.Mutex
	log     io.Writer // stderr lines; nil: none
	jsonl   io.Writer // --violations file; nil: none
	enc     *json.Encoder
	seen    map[string]int
	order   []string
	printed int
	total   int
	kept    []Violation
	dropped int
	// deferLines holds the stderr lines until the run ends: when stderr is
	// not a terminal it is often parsed, and a line written while the
	// program is in the middle of one of its own would mangle both.
	deferLines bool
	pending    []string
	// Masks are the run's --mask paths, for the tier of their denials.
	Masks []string
	// Allow is the run's --allow-host list, so that a hint never advises
	// a rule that was given.
	Allow egress.Allowlist
	// Silent prints no denial lines nor hints (sbx run --quiet); the
	// --violations file and the count at the end stay.
	Silent bool

	// Set by setSandbox once the sandbox exists.
	shimPID   uint32     // the sandbox's PID 1, sbx's own shim
	mounts    mountTable // the sandbox's mounts (see crossMount)
	workspace string
	readOnly  bool // the workspace is mounted read-only (no --write)
	hinted    bool // the --write hint was given
	netHinted bool // the --allow-host hint was given
	quiet     int  // routine probes refused (see quietEvent), not printed

	// lastFile is the last LSM file event of each pid, to leave out the
	// tracer's report of the same refusal (see pump).
	lastFile map[uint32]events.Event

	// The bounds of a flood (see maxDistinct, violationsPerSecond).
	now       func() time.Time
	winStart  time.Time      // the --violations second being counted
	winCount  int            // records written in it
	fileDrops dropCount      // records left out of --violations since the last dropped record
	overflow  map[string]int // denials past maxDistinct, by kind
	overflowN int
	lost      uint64 // events the kernel dropped, ring full
}

func New(log, jsonl io.Writer) *Reporter {
	r := &Reporter{log: log, jsonl: jsonl, seen: map[string]int{}, now: time.Now}
	if f, ok := log.(interface{ Fd() uintptr }); !ok || !term.IsTerminal(int(f.Fd())) {
		r.deferLines = true
	}
	if jsonl != nil {
		r.enc = json.NewEncoder(jsonl)
		r.enc.SetEscapeHTML(false)
	}
	return r
}

// setSandbox tells the Reporter about the sandbox: the pid of its shim
// (whose own refusals, such as the Landlock canary's, are sbx's and not
// reported), and the workspace, for the --write hint.
func (r *Reporter) SetSandbox(shimPID int, workspace string, write bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.shimPID, r.workspace, r.readOnly = uint32(shimPID), workspace, !write
}

// readMounts keeps the mount table of the sandbox whose PID 1 is shimPID,
// for telling the tracer's EXDEV events apart after the sandbox has gone
// (see crossMount). Called before the program starts, when the table is
// final; runs without the tracer (rootless) need not pay for it.
func (r *Reporter) ReadMounts(shimPID int) {
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
func violation(e events.Event, tier string) Violation {
	if e.Tier != "" {
		tier = e.Tier
	}
	return Violation{
		Time:   e.Time,
		Pid:    int(e.PID),
		Comm:   e.Comm,
		Op:     e.OpName(),
		Target: e.Target(),
		Errno:  unix.ErrnoName(e.Errno),
		Tier:   tier,
	}
}

func (r *Reporter) Add(v Violation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addLocked(v)
}

// addHinted reports v with hint (a whole line, or "" for none) in place of
// netHint's: the proxy and the DNS answerer know better why they refused.
func (r *Reporter) AddHinted(v Violation, hint string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addHintedLocked(v, hint)
}

// addEvent reports a BPF event, leaving out what is not the program's
// (the shim's own refusals), no denial (a rename across mounts) or
// reported already: a refusal of the LSM tier
// is seen by the tracer too when the syscall returns, right after the LSM
// program's event for the same process and errno.
func (r *Reporter) AddEvent(e events.Event, tier string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e.Op != events.OpSyscall {
		if e.PID == r.shimPID && r.shimPID != 0 {
			return // the shim's own: its BPF LSM canary
		}
		if e.Op >= events.OpFileOpen { // the LSM tier's
			if r.lastFile == nil {
				r.lastFile = map[uint32]events.Event{}
			}
			r.lastFile[e.PID] = e
		}
		v := violation(e, tier)
		if quietNet(e) {
			r.addQuietLocked(v)
			return
		}
		r.addLocked(v)
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
	if v.Tier == events.TierLandlock && slices.ContainsFunc(r.Masks, func(m string) bool { return hostfs.Under(e.Path, m) }) {
		v.Tier = TierMask // the mask's mode 0000, not a Landlock rule
	}
	if quietSyscall(e) {
		r.addQuietLocked(v)
		return
	}
	r.addLocked(v)
	if r.readOnly && !r.hinted && !r.Silent && e.Errno == unix.EROFS && e.IsWrite() && hostfs.Under(e.Path, r.workspace) {
		r.hinted = true
		r.emit(writeHint)
	}
}

// quietNet reports whether a denial of the network wall (or the LSM tier)
// is a routine probe rather than an attempt to reach something: a connect
// of a UDP socket sends nothing, it asks the routing table which source
// address would be used (getaddrinfo's address sorting, pip's and Node's
// IPv6 checks). Refused all the same.
func quietNet(e events.Event) bool {
	switch e.Op {
	case events.OpConnect4, events.OpConnect6, events.OpSocketConnect:
		return e.SockType == unix.SOCK_DGRAM
	}
	return false
}

// quietSyscalls are the calls refused by seccomp that runtimes try as a
// matter of course and do without: Node (libuv) probes io_uring at start.
var quietSyscalls = map[string]bool{"io_uring_setup": true}

// quietSyscall reports whether a tracer event is a routine probe.
func quietSyscall(e events.Event) bool {
	if e.Op != events.OpSyscall {
		return false
	}
	name, _, _ := strings.Cut(e.Target(), " ") // "io_uring_setup": no path
	return quietSyscalls[name]
}

// addQuietLocked records a routine probe: in --violations and the result
// like every denial, counted for the summary, but no "sbx: denied" line.
func (r *Reporter) addQuietLocked(v Violation) {
	r.quiet++
	r.keepLocked(v)
}

// keepLocked keeps v for the result (past MaxKept it is counted as
// dropped) and writes it to --violations.
func (r *Reporter) keepLocked(v Violation) {
	if len(r.kept) < MaxKept {
		r.kept = append(r.kept, v)
	} else {
		r.dropped++
	}
	if r.enc != nil {
		r.writeLocked(v)
	}
}

// netHint is the line printed once, after the first refused attempt to
// reach the network that the network wall refused: how to allow it. (The
// proxy's and the DNS answerer's denials bring their own, see addHinted.)
func NetHint(v Violation, allow egress.Allowlist) string {
	t := safetext.Escape(v.Target)
	switch {
	case v.Op == "socket" && strings.HasPrefix(v.Target, "AF_INET"):
		return "sbx: the program has no network (--net none); --net loopback gives it its own loopback, --allow-host HOST[:PORT] a host through sbx's proxy\n"
	case v.Op == "connect" && allowedTarget(v.Target, allow):
		// Allowed already, but dialed past the proxy (the wall's limit
		// of direct endpoints, or --net none).
		return fmt.Sprintf("sbx: %s is allowed, but only through sbx's proxy: the program dialed it directly; clients that honour HTTPS_PROXY (set in the sandbox) reach it\n", t)
	case v.Op == "connect":
		return fmt.Sprintf("sbx: to let the program reach %s, run sbx with --allow-host %s\n", t, t)
	case v.Op == "sendmsg":
		// sbx's proxy and forwarders carry TCP streams, not datagrams.
		return fmt.Sprintf("sbx: to let the program reach %s: --allow-host %s opens TCP to it; datagrams beyond the sandbox's loopback stay refused\n", t, t)
	}
	return ""
}

func (r *Reporter) addLocked(v Violation) { r.addHintedLocked(v, NetHint(v, r.Allow)) }

// allowedTarget reports whether target, an IP:PORT the wall refused, is
// one an --allow-host rule allows.
func allowedTarget(target string, allow egress.Allowlist) bool {
	ap, err := netip.ParseAddrPort(target)
	return err == nil && allow.Allows(ap.Addr().String(), ap.Port())
}

// addHintedLocked records v; hint, if any, is printed after v's line
// unless a network hint was printed already.
func (r *Reporter) addHintedLocked(v Violation, hint string) {
	r.total++
	if !r.netHinted && !r.Silent {
		if h := hint; h != "" {
			r.netHinted = true
			defer r.emit(h) // after the denial's own line
		}
	}
	r.keepLocked(v)
	key := v.Op + " " + v.Target
	if n, ok := r.seen[key]; ok {
		r.seen[key] = n + 1
		return
	}
	if len(r.seen) >= maxDistinct {
		if r.overflow == nil {
			r.overflow = map[string]int{}
		}
		r.overflow[kind(v)]++
		r.overflowN++
		return
	}
	r.seen[key] = 1
	r.order = append(r.order, key)
	if r.log == nil || r.Silent || r.printed >= maxViolationLines {
		return
	}
	r.printed++
	detail := fmt.Sprintf("%d %s", v.Pid, v.Comm)
	if v.Reason != "" {
		detail = v.Reason
	}
	// Every part may come from the sandbox (a name it looked up, a path,
	// its comm): escaped, so that it cannot forge a line or move the
	// terminal.
	r.emit(fmt.Sprintf("sbx: denied %s %s (%s)\n", safetext.Escape(v.Op), safetext.Escape(v.Target), safetext.Escape(detail)))
}

// writeLocked writes v to --violations, unless violationsPerSecond records
// were written in the current second: then v is counted for the next
// dropped record, written before the first record of a later second (or
// at the end of the run).
func (r *Reporter) writeLocked(v Violation) {
	now := r.now()
	if now.Sub(r.winStart) >= time.Second {
		r.flushDropsLocked(now, 0)
		r.winStart, r.winCount = now, 0
	}
	if r.winCount >= violationsPerSecond {
		r.fileDrops.Add(v, now)
		return
	}
	r.winCount++
	_ = r.enc.Encode(v)
}

// flushDropsLocked writes the dropped record for what was left out of
// --violations, with lost events of the kernel, if there is any.
func (r *Reporter) flushDropsLocked(now time.Time, lost uint64) {
	d := r.fileDrops
	if d.n == 0 && lost == 0 {
		return
	}
	rec := droppedRecord{Time: now, Op: DroppedOp, Count: d.n + int(lost), Since: d.since, Kinds: d.kinds, Lost: lost}
	switch {
	case d.n > 0 && lost > 0:
		rec.Reason = fmt.Sprintf("more than %d denials a second; the event ring was full", violationsPerSecond)
	case d.n > 0:
		rec.Reason = fmt.Sprintf("more than %d denials a second", violationsPerSecond)
	default:
		rec.Reason = "the event ring was full"
	}
	_ = r.enc.Encode(rec)
	r.fileDrops = dropCount{}
}

// addLost records events of the run's ring that the kernel dropped because
// the ring was full (a flood read slower than it came).
func (r *Reporter) AddLost(n uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lost += n
}

// emit writes one line to the log now, or at the end of the run (see
// deferLines).
func (r *Reporter) emit(line string) {
	if r.log == nil {
		return
	}
	if r.deferLines {
		r.pending = append(r.pending, line)
		return
	}
	io.WriteString(r.log, line)
}

// finish writes the last dropped record to --violations and prints the
// summary line: how many denials there were in all, how many distinct,
// past maxDistinct how many of each kind, and how many were lost.
func (r *Reporter) Finish() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.enc != nil {
		r.flushDropsLocked(r.now(), r.lost)
	}
	if r.log == nil || (r.total == 0 && r.lost == 0) {
		return
	}
	quiet := ""
	if r.quiet > 0 {
		quiet = fmt.Sprintf("; %d routine probe(s) refused quietly", r.quiet)
	}
	for _, line := range r.pending {
		io.WriteString(r.log, line)
	}
	r.pending = nil
	if hidden := len(r.order) - r.printed; hidden > 0 || r.total > r.printed || r.lost > 0 {
		fmt.Fprintf(r.log, "sbx: %d operation(s) denied in all (%d distinct%s)%s%s\n", r.total, len(r.order),
			overflowText(r.overflowN, r.overflow), lostText(r.lost), quiet)
	}
}

// overflowText is the summary's note on the denials past maxDistinct.
func overflowText(n int, byKind map[string]int) string {
	if n == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(byKind)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, byKind[k]))
	}
	return fmt.Sprintf(", then %d more by kind: %s", n, strings.Join(parts, ", "))
}

// lostText is the summary's note on events the kernel dropped.
func lostText(n uint64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %d more lost, read too slowly", n)
}

// violations returns what the run's result reports.
func (r *Reporter) Violations() ([]Violation, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Violation(nil), r.kept...), r.dropped
}

// pump reads events until the reader's deadline passes or it is closed,
// at most eventsPerSecond, and then adds what the kernel could not queue.
func (r *Reporter) Pump(er *events.Reader, tier string, done chan<- struct{}) {
	defer close(done)
	defer func() {
		if n, err := er.Dropped(); err == nil && n > 0 {
			r.AddLost(n)
		}
	}()
	canaries := canary.Events
	budget := newPumpBudget(time.Now)
	bad := 0
	for {
		budget.wait()
		e, err := er.Read()
		if err != nil {
			// A record this build cannot decode (another sbx build's
			// tracer, attached at the same time, knows other syscalls)
			// is skipped; the reader's own errors end the pump, and so
			// does a run of failures that never yields an event.
			if readerDone(err) || bad >= maxBadEvents {
				return
			}
			bad++
			continue
		}
		bad = 0
		if canaries > 0 && e.IsCanary() {
			canaries--
			continue
		}
		r.AddEvent(e, tier)
	}
}

// maxBadEvents is how many undecodable records in a row the pump skips
// before it gives up on the reader.
const maxBadEvents = 1000

// readerDone reports whether err ends an event reader: closed, past its
// deadline, or flushed (see drain).
func readerDone(err error) bool {
	return errors.Is(err, os.ErrClosed) || errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, ringbuf.ErrFlushed)
}

// pumpBudget paces the pump: at most eventsPerSecond events a second, in
// windows of pumpWindow.
type pumpBudget struct {
	now   func() time.Time
	start time.Time
	n     int
	sleep func(time.Duration)
}

func newPumpBudget(now func() time.Time) *pumpBudget {
	return &pumpBudget{now: now, start: now(), sleep: time.Sleep}
}

// wait counts one event, first sleeping out the window if it is used up.
func (b *pumpBudget) wait() {
	const perWindow = eventsPerSecond * int(pumpWindow) / int(time.Second)
	if b.n >= perWindow {
		if d := pumpWindow - b.now().Sub(b.start); d > 0 {
			b.sleep(d)
		}
	}
	if b.now().Sub(b.start) >= pumpWindow {
		b.start, b.n = b.now(), 0
	}
	b.n++
}

// drain makes the reader return what is already queued, then stop.
func Drain(er *events.Reader, done <-chan struct{}) {
	_ = er.Flush()
	select {
	case <-done:
	case <-time.After(time.Second):
	}
}

// degraded notes that the run's denials cannot be reported (err says why),
// while its walls hold all the same.
func (r *Reporter) Degraded(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.log != nil {
		fmt.Fprintf(r.log, "sbx: warning: this run's denials are enforced but not reported: %v\n", err)
	}
}

// HoldLines keeps the "sbx: denied" lines until Finish, written through
// wrap(log) then (the run's terminal uses it to start them on a line of
// their own after a full-screen program's last screen).
func (r *Reporter) HoldLines(wrap func(io.Writer) io.Writer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deferLines = true
	if r.log != nil {
		r.log = wrap(r.log)
	}
}
