package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/canary"
)

// Why the BPF LSM tier is registered late, and how the program waits for it.
//
// The tier is keyed by the sandbox's cgroup, and libcontainer's init runs in
// that cgroup before it execs the shim: it closes inherited fds by listing
// thread-self/fd on a private procfs it mounts itself, execs the shim
// through a single-file bind mount (/.sbx/sbx) and reopens the host's exec
// FIFO. None of that is in the program's file policy, and widening the
// policy for it would widen it for the program too. Nor does the exec
// FIFO's EOF (what [Sandbox.Exec] waits for) mean init is gone: init closes
// the FIFO with every other fd before its exec. So the shim itself says when
// it runs: with [ShimConfig.AwaitLSM] it writes one byte on the ready pipe
// and then blocks on the lifeline; the runner waits for that byte
// ([Sandbox.AwaitShim]), registers the sandbox with the tier, and sends the
// go-ahead ([Sandbox.Release]). The shim then proves the tier on itself
// ([canary.LSM]) before anything else, so the program's first
// instruction runs confined, or not at all.

// readyPipe makes the ready pipe: s keeps the read end, the returned write
// end goes to the shim (the caller closes its copy once the shim has it).
func (s *Sandbox) readyPipe() (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("create ready pipe: %w", err)
	}
	s.ready = r
	return w, nil
}

// AwaitShim waits until the shim of a sandbox created with
// [ShimConfig.AwaitLSM] runs, after [Sandbox.Exec]: from then on nothing of
// libcontainer runs in the sandbox. It fails if the shim died first.
func (s *Sandbox) AwaitShim() error {
	if s.ready == nil {
		return errors.New("await shim: the sandbox was not created with AwaitLSM")
	}
	var b [1]byte
	_ = s.ready.SetReadDeadline(time.Now().Add(shimStartTimeout))
	_, err := io.ReadFull(s.ready, b[:])
	s.ready.Close()
	s.ready = nil
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return fmt.Errorf("await shim: the shim did not start within %v", shimStartTimeout)
	}
	if err != nil {
		return fmt.Errorf("await shim: the sandbox's init ended before the shim ran (%w)", err)
	}
	return nil
}

// shimStartTimeout bounds [Sandbox.AwaitShim]: the shim starts in
// milliseconds (seconds under an emulator); a wait this long means it hangs.
const shimStartTimeout = time.Minute

// Release tells a shim started with [ShimConfig.AwaitLSM] that the sandbox
// is registered with the BPF LSM tier: it then proves the tier and starts
// the program. The go-ahead is one byte on the lifeline pipe, whose EOF
// (sbx gone) otherwise ends the sandbox.
func (s *Sandbox) Release() error {
	if s.lifeline == nil {
		return errors.New("release sandbox: no lifeline to the shim")
	}
	if _, err := s.lifeline.Write([]byte{1}); err != nil {
		return fmt.Errorf("release sandbox: tell the shim to go ahead: %w", err)
	}
	return nil
}

// awaitRelease is the shim's side: it says on readyFD that it runs, blocks
// until sbx calls [Sandbox.Release] (one byte on the lifeline fd), then
// proves the BPF LSM tier on itself. It prints why and returns 125 if sbx
// went away first or the proof fails.
func awaitRelease(readyFD, lifeline int) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "sbx: refusing to run: shim: "+format+"\n", args...)
		return 125
	}
	if readyFD <= 0 || lifeline <= 0 {
		return fail("no ready pipe or lifeline for the BPF LSM tier's go-ahead")
	}
	_, err := unix.Write(readyFD, []byte{1})
	unix.Close(readyFD)
	if err != nil {
		return fail("tell sbx the shim runs: %v", err)
	}
	var b [1]byte
	for {
		n, err := unix.Read(lifeline, b[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fail("wait for the BPF LSM tier: %v", err)
		}
		if n == 0 {
			return fail("sbx ended before the BPF LSM tier was in place")
		}
		break
	}
	if err := canary.LSM(ShimPath); err != nil {
		fmt.Fprintf(os.Stderr, "sbx: refusing to run: %v\n", err)
		return 125
	}
	return 0
}
