package runner

import (
	"fmt"
	"io"

	bpftracer "github.com/sbx-sandbox/sbx/bpf/tracer"
)

// tracer is one run's use of the denial tracer (tracer.Tracer): it reports
// what Landlock, seccomp and the read-only mounts refuse, into the network
// wall's per-run ring. It only reports: it protects nothing, so a run goes
// ahead without it (sbx doctor says why it is missing), and nothing it does
// can lift a refusal.
type tracer struct {
	trace *bpftracer.Tracer
	use   *bpftracer.Use
}

// openTracer loads (or reuses) the tracer and attaches it for this run.
func openTracer(w *netWall) (*tracer, error) {
	t, err := bpftracer.Open(w.parent, w.net.EventMaps(), nil) // the wall's parent cgroup
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
