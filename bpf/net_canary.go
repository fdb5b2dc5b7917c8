package bpf

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// CanaryComm is the comm of the thread that runs [Canary], so the runner
// can tell the canary's own denials from the sandboxed program's. (A
// sandboxed program could name itself so too; that only hides its lines
// from the report, never lifts a denial. A runner that drops exactly the
// events Canary caused, and no more, is not fooled either.)
const CanaryComm = "sbx-canary"

// CanaryEvents is how many events one successful Canary produces.
const CanaryEvents = 2

// Canary proves the network wall holds for the calling process: it must be
// in a run cgroup under the wall's parent, where socket(AF_INET, SOCK_DGRAM)
// and socket(AF_INET6, SOCK_STREAM) must fail with EPERM. It needs no
// privileges (capability checks cannot mask the wall: these sockets need
// none). Call it in the sandbox right before exec; an error means the run
// must not start (fail closed).
func Canary() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old [16]byte
	if err := unix.Prctl(unix.PR_GET_NAME, uintptrOf(&old[0]), 0, 0, 0); err != nil {
		return fmt.Errorf("net canary: get thread name: %w", err)
	}
	name := append([]byte(CanaryComm), 0)
	if err := unix.Prctl(unix.PR_SET_NAME, uintptrOf(&name[0]), 0, 0, 0); err != nil {
		return fmt.Errorf("net canary: set thread name: %w", err)
	}
	defer unix.Prctl(unix.PR_SET_NAME, uintptrOf(&old[0]), 0, 0, 0)

	for _, s := range []struct {
		family, typ int
		what        string
	}{
		{unix.AF_INET, unix.SOCK_DGRAM, "socket(AF_INET, SOCK_DGRAM)"},
		{unix.AF_INET6, unix.SOCK_STREAM, "socket(AF_INET6, SOCK_STREAM)"},
	} {
		fd, err := unix.Socket(s.family, s.typ|unix.SOCK_CLOEXEC, 0)
		if err == nil {
			unix.Close(fd)
			return fmt.Errorf("net canary: %s succeeded: the network wall is not enforced for this process", s.what)
		}
		if !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("net canary: %s failed with %w, want EPERM from the network wall", s.what, err)
		}
	}
	return nil
}

// IsCanary reports whether e may be one of Canary's own events.
func (e Event) IsCanary() bool { return e.Op == OpSocketCreate && e.Comm == CanaryComm }

func uintptrOf(p *byte) uintptr { return uintptr(unsafe.Pointer(p)) }
