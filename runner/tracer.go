package runner

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/bpf"
	"github.com/sbx-sandbox/sbx/sandbox"
)

// tracer is one run's use of the denial tracer (bpf.Trace): it reports
// what Landlock, seccomp and the read-only mounts refuse, into the network
// wall's per-run ring. It only reports: it protects nothing, so a run goes
// ahead without it (sbx doctor says why it is missing), and nothing it does
// can lift a refusal.
type tracer struct {
	trace *bpf.Trace
	use   *bpf.TraceUse
}

// openTracer loads (or reuses) the tracer and attaches it for this run.
func openTracer(w *netWall) (*tracer, error) {
	root, err := sandbox.Cgroup2Mount()
	if err != nil {
		return nil, fmt.Errorf("denial tracer: %w", err)
	}
	t, err := bpf.OpenTrace(filepath.Join(root, sandbox.CgroupParent), w.net.EventMaps(), nil)
	if err != nil {
		return nil, fmt.Errorf("denial tracer: %w", err)
	}
	u, err := t.Acquire()
	if err != nil {
		t.Close()
		return nil, fmt.Errorf("denial tracer: %w", err)
	}
	return &tracer{trace: t, use: u}, nil
}

// close ends the run's use; the last run detaches the tracer.
func (t *tracer) close() {
	_ = t.use.Release()
	_ = t.trace.Close()
}

// tracerStart is the tracer being opened in the background for Run.
// Attaching may wait for an RCU grace period (~10 ms here when the
// previous run detached it moments ago: the kernel waits when a tracepoint
// goes from one callback to none and back), so it overlaps the sandbox's
// creation; the program only needs it from its exec on.
type tracerStart struct {
	done chan struct{}
	t    *tracer
	err  error
}

func startTracer(w *netWall) *tracerStart {
	s := &tracerStart{done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.t, s.err = openTracer(w)
	}()
	return s
}

// ready waits for the tracer. Without it the run still goes ahead, with a
// warning that its refusals by Landlock, seccomp and the read-only mounts
// will not be reported.
func (s *tracerStart) ready(log io.Writer) {
	<-s.done
	if s.err != nil {
		fmt.Fprintf(log, "sbx: warning: refusals by Landlock, seccomp and read-only mounts will not be reported: %v (see sbx doctor)\n", s.err)
		s.err = nil
	}
}

// close waits for the tracer and releases it.
func (s *tracerStart) close() {
	<-s.done
	if s.t != nil {
		s.t.close()
	}
}

// crossMount reports whether the refused link or rename of e went from one
// mount to another: the kernel's own EXDEV, which programs handle (mv
// copies instead) and which is no denial, unlike Landlock's EXDEV between
// differently ruled directories of one mount. The mounts are looked up in
// the sandbox through its PID 1's root while it runs; when they cannot be
// (the sandbox is gone), the event is kept.
func crossMount(pid1 uint32, e bpf.Event) bool {
	if e.Errno != unix.EXDEV || e.Syscall == nil || e.Syscall.Path2 == "" || pid1 == 0 {
		return false
	}
	from := e.Path
	if e.OpName() == "rename" {
		from = filepath.Dir(from)
	}
	a, ok1 := mountID(pid1, from)
	b, ok2 := mountID(pid1, filepath.Dir(e.Syscall.Path2))
	return ok1 && ok2 && a != b
}

// mountID is the id of the mount that path (absolute, inside the sandbox)
// is on.
func mountID(pid1 uint32, path string) (uint64, bool) {
	if !filepath.IsAbs(path) {
		return 0, false
	}
	var st unix.Statx_t
	p := "/proc/" + strconv.FormatUint(uint64(pid1), 10) + "/root" + path
	if err := unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, unix.STATX_MNT_ID, &st); err != nil {
		return 0, false
	}
	if st.Mask&unix.STATX_MNT_ID == 0 {
		return 0, false
	}
	return st.Mnt_id, true
}
