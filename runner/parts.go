package runner

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/sbx-sandbox/sbx/bpf"
	"github.com/sbx-sandbox/sbx/bpf/netwall"
	"github.com/sbx-sandbox/sbx/home"
	"github.com/sbx-sandbox/sbx/hostfs"
	"github.com/sbx-sandbox/sbx/internal/safetext"
	"github.com/sbx-sandbox/sbx/protect"
	"github.com/sbx-sandbox/sbx/report"
	"github.com/sbx-sandbox/sbx/sandbox"
	"github.com/sbx-sandbox/sbx/stage"
)

// run is one run's plan (the options resolved against the host: the
// complete sandbox spec, its parts) and the state its parts share.
type run struct {
	o    *Options
	spec *sandbox.Spec
	rep  *report.Reporter
	res  *Result

	// Set once the sandbox is created (see create).
	sb       *sandbox.Sandbox
	cgroupID uint64 // its cgroup2 id (root runs; computed once)

	wall   *netWall       // the network wall (root runs)
	net    netwall.Policy // the wall's exceptions for the run
	term   *terminal      // with --tty
	copied chan struct{}  // closed when the pty's output is copied
	parts  []part         // in setup order
	ready  int            // how many of parts were prepared
	// execed is set once the shim was told to start the program: only
	// then can the program have created anything (see createdPart).
	execed bool
}

// A part is one piece of a run set up around its sandbox: the network
// wall, the denial tracer, the BPF LSM file tier (those two are
// protection tiers), the terminal, the
// sandbox itself, the egress proxy, the DNS stub, and the run's own
// housekeeping (its home, copy-back, the denial report). Run calls prepare
// of each part in order before the sandbox exists, then creates it, then
// attach of each in order before the program starts, and started once the
// shim runs (the program still held). close runs for every part whose
// prepare succeeded, in reverse order, on every path: the teardown order
// is the order of the list (see [run.plan]), not the placement of defers.
type part interface {
	prepare(r *run) error
	attach(r *run) error
	started(r *run) error
	close(r *run)
}

// base is a part's no-op steps.
type base struct{}

func (base) prepare(*run) error { return nil }
func (base) attach(*run) error  { return nil }
func (base) started(*run) error { return nil }
func (base) close(*run)         {}

// plan lists the parts of r. Closed in reverse: the network part (DNS
// answerer, forwarders, egress proxy) before the sandbox is destroyed (every denial they see is
// reported), the terminal restored after it, the BPF tiers released after
// that, the report finished once the wall's ring is drained, the staged
// files copied back, then the --rw files, and the throwaway home removed
// last. The first four are set up before the plan (see Run).
func (r *run) plan(cleanup func(), staged *stage.Plan) {
	r.parts = []part{
		&homePart{cleanup: cleanup},
		rwCopyBackPart{},
		&copyBackPart{plan: staged},
		createdPart{},
		reportPart{},
	}
	if !r.spec.Rootless {
		r.parts = append(r.parts, &wallTier{}, &tracerPart{})
		if r.o.tiers.bpfLSM {
			r.parts = append(r.parts, &lsmFileTier{})
		}
	}
	if r.o.Terminal {
		r.parts = append(r.parts, terminalPart{})
	}
	r.parts = append(r.parts, sandboxPart{})
	r.parts = append(r.parts, &networkPart{})
}

// prepareAll prepares the parts not prepared yet, in order; those
// prepared are closed by closeAll whatever happens next.
func (r *run) prepareAll() error {
	for ; r.ready < len(r.parts); r.ready++ {
		if err := r.parts[r.ready].prepare(r); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) attachAll() error {
	for _, t := range r.parts {
		if err := t.attach(r); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) startedAll() error {
	for _, t := range r.parts {
		if err := t.started(r); err != nil {
			return err
		}
	}
	return nil
}

// closeAll closes the prepared parts in reverse order.
func (r *run) closeAll() {
	for i := r.ready - 1; i >= 0; i-- {
		r.parts[i].close(r)
	}
	r.ready = 0
}

// create creates the sandbox from the complete spec (validated once, by
// sandbox.Create, and not changed after), checks every mount in place
// (the protected paths, and each bind against the source sbx checked:
// see mountsrc.go), and computes its cgroup id once for the BPF tiers.
func (r *run) create() error {
	o := r.o
	if err := o.holdRest(r.spec); err != nil {
		return err
	}
	sb, err := sandbox.Create(r.spec, sandbox.Dirs{Root: o.StateDir}, sandbox.Stdio{Stdin: stdinOrNil(o.Stdin), Stdout: o.Stdout, Stderr: o.Stderr})
	if err != nil {
		if r.spec.Rootless {
			err = usernsError(err)
		}
		return fmt.Errorf("set up sandbox: %w", err)
	}
	r.sb = sb
	if err := o.protect.Verify(sb.Pid()); err != nil {
		return err
	}
	if err := o.verifyMounts(r.spec, sb.Pid()); err != nil {
		return err
	}
	r.rep.SetSandbox(sb.Pid(), r.spec.Workspace, r.spec.Write)
	if !r.spec.Rootless {
		id, err := bpf.CgroupID(sb.CgroupPaths()[""])
		if err != nil {
			return fmt.Errorf("network wall: %w", err)
		}
		r.cgroupID = id
	}
	return nil
}

// homePart removes a throwaway home (sbx's own home stays).
type homePart struct {
	base
	cleanup func()
}

func (t *homePart) close(*run) { t.cleanup() }

// copyBackPart copies staged session files back to the host, after the
// sandbox is destroyed, on every exit path.
type copyBackPart struct {
	base
	plan *stage.Plan
}

func (t *copyBackPart) close(r *run) {
	inside := ""
	if t.plan != nil && t.plan.RunDir() != "" {
		inside = t.plan.Inside()
	}
	if err := t.plan.Finish(); err != nil {
		r.res.CopyBackErr = err
		fmt.Fprintf(r.o.Log, "sbx: copying staged files back: %s\n", safetext.Escape(err.Error()))
	}
	if inside != "" {
		// The staged files are in the run dir; its mount point in the
		// shared home is an empty directory no other run uses.
		home.RemoveMountPoint(r.o.cred, r.spec, inside)
	}
}

// rwCopyBackPart copies single --rw files below the home back to the
// host, after the staged files.
type rwCopyBackPart struct{ base }

func (rwCopyBackPart) close(r *run) {
	if err := home.CopyBackRW(r.o.rwCopies, r.o.runDir, r.spec.ID, r.o.cred, realPath(r.o.who.Home), r.o.Log); err != nil {
		fmt.Fprintf(r.o.Log, "sbx: copying --rw files back: %s\n", safetext.Escape(err.Error()))
		if r.res.CopyBackErr == nil {
			r.res.CopyBackErr = err
		}
	}
}

// createdPart moves aside the protected entries the program created,
// once the sandbox is destroyed (its program and every process of it are
// gone) and before the copy-backs: the walk of the start is done again
// over the writable trees, as the invoking user, and an entry it did not
// find then (a new pkg/.pi, sub/.git, .envrc) would run outside the
// sandbox later (pi, git, direnv read them), so it is renamed to
// NAME.sbx-blocked-ID for the user to look at. The run's exit status
// stays the program's whatever happens here.
type createdPart struct{ base }

func (createdPart) close(r *run) {
	o := r.o
	m := o.walked
	if !r.execed || !m.Write && len(m.RW) == 0 {
		return // the program never ran, or had no writable tree
	}
	// A command-line --rw names what the user opened as it was given: a
	// protected entry that was a symlink (--rw .git, .git a link) is
	// opened by its name too, and the program may replace it.
	var given []string
	for _, p := range o.ReadWrite {
		if !filepath.IsAbs(p) {
			p = filepath.Join(o.Cwd, p)
		}
		given = append(given, filepath.Clean(p))
	}
	type moved struct{ from, to string }
	var done []moved
	var failed []error
	err := o.cred.Do(func() error {
		created, err := m.Created(o.protect, o.policyRW, o.who.Home)
		if err != nil {
			return err
		}
		for _, p := range created {
			if slices.ContainsFunc(given, func(g string) bool { return hostfs.Under(p, g) }) {
				continue
			}
			to, err := protect.MoveAside(p, r.spec.ID)
			if err != nil {
				failed = append(failed, err)
				continue
			}
			done = append(done, moved{p, to})
		}
		return nil
	})
	if err != nil {
		fmt.Fprintf(o.Log, "sbx: could not search the writable trees for protected entries the program created: %s\n", safetext.Escape(err.Error()))
	}
	for _, mv := range done {
		r.res.Blocked = append(r.res.Blocked, mv.to)
		fmt.Fprintf(o.Log, "sbx: moved %s aside to %s: the program created this protected entry, and what is in it runs outside the sandbox (git hooks, pi extensions, direnv, editor tasks); look at it, and move it back if you trust it\n", safetext.Escape(mv.from), safetext.Escape(filepath.Base(mv.to)))
	}
	for _, err := range failed {
		fmt.Fprintf(o.Log, "sbx: the program created a protected entry that could not be moved aside (it runs outside the sandbox if used; remove it unless you trust it): %s\n", safetext.Escape(err.Error()))
	}
}

// reportPart ends the denial report (its summary line) once every part
// that feeds it is closed, and hands the denials to the result.
type reportPart struct{ base }

func (reportPart) close(r *run) {
	r.rep.Finish()
	r.res.Violations, r.res.ViolationsDropped = r.rep.Violations()
}

// wallTier is the cgroup BPF network wall: loaded before the sandbox
// exists (it is walled from its first instruction), then told the run's
// exceptions and read for its denials.
type wallTier struct{ base }

func (wallTier) prepare(r *run) error {
	w, err := openNetWall()
	if err != nil {
		return err
	}
	r.wall = w
	return nil
}

func (wallTier) attach(r *run) error {
	r.rep.ReadMounts(r.sb.Pid()) // the tracer comes with the wall
	if err := r.wall.watch(r.cgroupID, r.rep); err != nil {
		return err
	}
	p, err := r.o.netPolicy(r.sb.Pid())
	if err != nil {
		return err
	}
	r.net = p
	if p.IsZero() {
		return nil
	}
	if err := r.wall.checkForeign(p); err != nil {
		return err
	}
	return r.wall.allow(r.cgroupID, p)
}

func (wallTier) close(r *run) { r.wall.close() }

// tracerPart is the denial tracer, attached in the background while the
// sandbox is created and waited for before the program starts.
type tracerPart struct {
	base
	start *tracerStart
}

func (t *tracerPart) prepare(r *run) error {
	t.start = startTracer(r.wall)
	return nil
}

func (t *tracerPart) attach(r *run) error {
	t.start.ready(r.o.Log)
	return nil
}

func (t *tracerPart) close(*run) {
	t.start.ready(io.Discard) // an error path before attach
	t.start.close()
}

// lsmFileTier is the BPF LSM file tier. Only once the shim runs
// (libcontainer's init is gone) is the sandbox registered with it; the
// shim holds the program back until Release and proves the tier first
// (see sandbox/goahead.go).
type lsmFileTier struct {
	base
	lsm *lsmTier
}

func (t *lsmFileTier) prepare(r *run) error {
	l, err := openLSMTier(r.wall)
	if err != nil {
		return err
	}
	t.lsm = l
	return nil
}

func (t *lsmFileTier) started(r *run) error {
	if err := r.sb.AwaitShim(); err != nil {
		return err
	}
	if err := t.lsm.add(r.spec, r.cgroupID, r.sb.Pid(), r.net); err != nil {
		return err
	}
	return r.sb.Release()
}

func (t *lsmFileTier) close(*run) { t.lsm.close() }

// terminalPart puts the user's terminal in raw mode for --tty and copies
// the sandbox's pty to it.
type terminalPart struct{ base }

func (terminalPart) prepare(r *run) error {
	t, err := newTerminal(r.o.Stdin)
	if err != nil {
		return err
	}
	r.term = t
	t.holdLines(r.rep)
	return nil
}

func (terminalPart) attach(r *run) error {
	r.copied = r.term.attach(r.sb.Console(), r.o.Stdout)
	return nil
}

func (terminalPart) close(r *run) { r.term.restore() }

// sandboxPart is the sandbox's place in the teardown: created by Run
// between prepare and attach (see run.create), destroyed here.
type sandboxPart struct{ base }

func (sandboxPart) close(r *run) {
	if r.sb == nil {
		return
	}
	if err := r.sb.Destroy(); err != nil {
		r.res.CleanupErr = err
	}
}

// networkPart is what sbx serves in the sandbox's network namespace:
// the egress proxy and forwarders of --allow-host, the DNS answerer (a
// name fails at once, or an allowed one gets its forwarder's address) and
// the --publish listeners; root and rootless alike (see
// [Options.startNetwork]). Closed before the sandbox is destroyed, so
// every denial they see is reported.
type networkPart struct {
	base
	stop func()
}

func (t *networkPart) attach(r *run) error {
	stop, err := r.o.startNetwork(r.sb, r.spec.Rootless, r.rep)
	if err != nil {
		return err
	}
	t.stop = stop
	return nil
}

func (t *networkPart) close(*run) {
	if t.stop != nil {
		t.stop()
	}
}

// stdinOrNil keeps a nil *os.File from becoming a non-nil io.Reader.
func stdinOrNil(f *os.File) io.Reader {
	if f == nil {
		return nil
	}
	return f
}
