package runner

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/bpf/events"
	"github.com/sbx-sandbox/sbx/sandbox"
)

// TestTracerCoversSeccompDenyList: every syscall seccomp refuses with
// EPERM is one the tracer reports (or one x86_64 lacks).
func TestTracerCoversSeccompDenyList(t *testing.T) {
	n := 0
	for _, s := range sandbox.Seccomp().Syscalls {
		if s.Action != configs.Errno || s.ErrnoRet == nil || *s.ErrnoRet != uint(unix.EPERM) {
			continue
		}
		n++
		if !events.TracesSeccomp(s.Name) && !slices.Contains(events.SeccompAbsent, s.Name) {
			t.Errorf("seccomp refuses %s with EPERM, but the denial tracer does not report it (bpf/trace_syscalls_amd64.go)", s.Name)
		}
	}
	if n < 40 {
		t.Errorf("only %d EPERM rules in the seccomp filter: the test no longer reads it right", n)
	}
}

// TestTracerMissingRunGoesOn: a tracer that could not be opened makes the
// run warn, once, and go on (reporting is no protection); closing it is a
// no-op.
func TestTracerMissingRunGoesOn(t *testing.T) {
	s := &tracerStart{done: make(chan struct{}), err: errors.New("load program: operation not permitted")}
	close(s.done)
	var log bytes.Buffer
	s.ready(&log)
	s.ready(&log)
	want := "sbx: warning: refusals by Landlock, seccomp and read-only mounts will not be reported: load program: operation not permitted (see sbx doctor)\n"
	if log.String() != want {
		t.Errorf("warning %q, want %q", log.String(), want)
	}
	s.close()
}
