package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/opencontainers/runc/libcontainer/seccomp"
	"golang.org/x/sys/unix"
	"kernel.org/pub/linux/libs/security/libcap/psx"

	"github.com/sbx-sandbox/sbx/internal/safetext"
)

// The exec step starts the program of a rootless sandbox. Its user
// namespace (libcontainer's) maps the user's ids to 0, the one id an
// unprivileged user can map and the one libcontainer's bootstrap needs;
// the program should still run as the user. So the shim starts the step in
// a user namespace of its own, nested in the sandbox's, that maps the ids
// back ("UID 0 1": the user's uid inside is the sandbox's 0, which is the
// user on the host). The step then confines itself as the shim confines a
// root sandbox's program: it drops the bounding set it got with the new
// namespace, applies Landlock and proves it and the network with their
// canaries, stacks the default seccomp filter (which refuses new
// namespaces; the shim's own filter lets the shim create this one), and
// execs the program in its place. The shim stays outside the program's
// Landlock domain, so that Landlock's signal scope lets it forward signals.
//
// Where the nested namespace cannot be created (an AppArmor policy that
// allows user namespaces to the sbx binary only, say), the step runs in the
// sandbox's namespace and the program runs as its uid 0, as before, with
// the same confinement.

// execStepArg0 is argv[0] of the exec step; [Init] dispatches on it (with
// execStepEnv set).
const execStepArg0 = "sbx-exec-step"

// execStepEnv carries the [ShimConfig] to the exec step.
const execStepEnv = "_SBX_EXEC_STEP"

// startExecStep starts the exec step for args with attr (process group,
// terminal), in a user namespace that maps cfg.UserNS's ids back when it
// can be created. The step execs the program once a byte arrives on
// goAhead, which the caller then closes.
func startExecStep(cfg ShimConfig, args []string, attr *syscall.SysProcAttr) (_ *os.Process, goAhead *os.File, err error) {
	goR, goW, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("exec step pipe: %w", err)
	}
	defer goR.Close()
	defer func() {
		if err != nil {
			goW.Close()
		}
	}()
	cfg.LifelineFD = 0
	cfg.GoFD = 3
	environ := func(nested bool) ([]string, error) {
		cfg.Nested = nested
		raw, err := json.Marshal(cfg)
		if err != nil {
			return nil, fmt.Errorf("encode exec step config: %w", err)
		}
		return append(os.Environ(), execStepEnv+"="+string(raw)), nil
	}
	pa := &os.ProcAttr{Files: []*os.File{os.Stdin, os.Stdout, os.Stderr, goR}}
	if pa.Env, err = environ(true); err != nil {
		return nil, nil, err
	}
	argv := append([]string{execStepArg0}, args...)
	ns := *attr
	ns.Cloneflags = unix.CLONE_NEWUSER
	ns.UidMappings = []syscall.SysProcIDMap{{ContainerID: cfg.UserNS.UID, HostID: 0, Size: 1}}
	ns.GidMappings = []syscall.SysProcIDMap{{ContainerID: cfg.UserNS.GID, HostID: 0, Size: 1}}
	ns.GidMappingsEnableSetgroups = false
	// The step execs as the user, which clears the capabilities the new
	// namespace gave it; CAP_SETPCAP, kept as ambient, lets it empty the
	// (full) bounding set of that namespace before it clears that too.
	ns.AmbientCaps = []uintptr{unix.CAP_SETPCAP}
	pa.Sys = &ns
	// The child's /proc files, where the shim writes its id maps, belong
	// to root while it is not dumpable, and it inherits the shim's flag:
	// dumpable for the moment of the fork, when nothing but the shim runs
	// in the sandbox.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0); err != nil {
		return nil, nil, fmt.Errorf("set dumpable for the exec step: %w", err)
	}
	p, nsErr := os.StartProcess(ShimPath, argv, pa)
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		if p != nil {
			p.Kill()
		}
		return nil, nil, fmt.Errorf("set non-dumpable again: %w", err)
	}
	if nsErr == nil {
		return p, goW, nil
	}
	pa.Sys = attr
	if pa.Env, err = environ(false); err != nil {
		return nil, nil, err
	}
	if p, err = os.StartProcess(ShimPath, argv, pa); err != nil {
		return nil, nil, fmt.Errorf("start exec step: %w (in a user namespace of its own: %v)", err, nsErr)
	}
	return p, goW, nil
}

// runExecStep is the exec step: it confines itself and becomes the program
// args, or returns the status sbx reports (125 when a protection does not
// hold, 126 and 127 when the program cannot run).
func runExecStep(args []string) int {
	// Landlock and seccomp bind the thread that execs.
	runtime.LockOSThread()
	cfg, err := takeShimConfig(execStepEnv, args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sbx: exec step: %v\n", err)
		return 125
	}
	if err := awaitGoAhead(cfg.GoFD); err != nil {
		fmt.Fprintf(os.Stderr, "sbx: refusing to run: exec step: %v\n", err)
		return 125
	}
	if cfg.Seccomp == nil {
		fmt.Fprintln(os.Stderr, "sbx: refusing to run: exec step: no seccomp filter to install")
		return 125
	}
	if err := dropBoundingSet(cfg.Nested); err != nil {
		fmt.Fprintf(os.Stderr, "sbx: refusing to run: exec step: %v\n", err)
		return 125
	}
	if err := clearCaps(); err != nil {
		fmt.Fprintf(os.Stderr, "sbx: refusing to run: exec step: %v\n", err)
		return 125
	}
	if code := confine(cfg); code != 0 {
		return code
	}
	path, code := lookPath(args[0])
	if code != 0 {
		return code
	}
	if _, err := seccomp.InitSeccomp(cfg.Seccomp); err != nil {
		fmt.Fprintf(os.Stderr, "sbx: refusing to run: seccomp: %v\n", err)
		return 125
	}
	err = unix.Exec(path, args, os.Environ())
	fmt.Fprintf(os.Stderr, "sbx: %s: %v\n", safetext.Escape(args[0]), err)
	if errors.Is(err, unix.ENOENT) {
		return ExitNotFound
	}
	return ExitNotExecutable
}

// awaitGoAhead waits for the shim's byte on fd, which it sends once it has
// dropped its capabilities, and closes fd.
func awaitGoAhead(fd int) error {
	if fd <= 2 {
		return errors.New("no go-ahead pipe")
	}
	f := os.NewFile(uintptr(fd), "go-ahead")
	defer f.Close()
	var b [1]byte
	if n, err := f.Read(b[:]); n != 1 || b[0] != 1 {
		return fmt.Errorf("no go-ahead from the shim: %v", err)
	}
	return nil
}

// dropBoundingSet empties the capability bounding set, with the
// CAP_SETPCAP the step holds: kept as ambient across its exec in its own
// namespace, or inherited from the shim in the sandbox's (the fallback).
// In its own namespace an LSM may still refuse the drop (AppArmor's
// user namespace restriction denies every capability there); the set is
// then left as it is, harmless since no capability of that namespace can
// be used, and the program, a non-root uid under no_new_privs, cannot gain
// one. Everywhere else a capability that stays is an error.
func dropBoundingSet(nested bool) error {
	last, err := capLastCap()
	if err != nil {
		return err
	}
	for c := 0; c <= last; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if err == nil {
			continue
		}
		if !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
		if nested {
			return nil
		}
		if in, _ := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0); in != 0 {
			return fmt.Errorf("capability %d is in the bounding set and cannot be dropped: %w", c, err)
		}
	}
	return nil
}

// clearCaps empties the calling thread's ambient, permitted, effective and
// inheritable capabilities and checks that they are empty.
func clearCaps() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if err := unix.Capset(&hdr, &none[0]); err != nil {
		return fmt.Errorf("clear capabilities: %w", err)
	}
	return checkNoCaps()
}

// checkNoCaps fails unless the calling thread's permitted, effective and
// inheritable capabilities are empty.
func checkNoCaps() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var got [2]unix.CapUserData
	if err := unix.Capget(&hdr, &got[0]); err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	if got != [2]unix.CapUserData{} {
		return fmt.Errorf("capabilities left after clearing them: %+v", got)
	}
	return nil
}

// capLastCap is the highest capability the kernel knows.
func capLastCap() (int, error) {
	data, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return 0, fmt.Errorf("read cap_last_cap: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || n < 0 || n > 63 {
		return 0, fmt.Errorf("cap_last_cap %q: not a capability number", strings.TrimSpace(string(data)))
	}
	return n, nil
}

// dropShimCaps drops the capabilities the shim of a rootless sandbox holds
// to start the exec step ([shimCaps]), on every thread: the bounding set
// (while CAP_SETPCAP is still effective), then the permitted and effective
// sets. It checks the result on the calling thread.
func dropShimCaps() error {
	last, err := capLastCap()
	if err != nil {
		return err
	}
	for c := 0; c <= last; c++ {
		// Every thread has the same set: a broadcast (psx signals each
		// thread) only for what is in it.
		if in, _ := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0); in == 0 {
			continue
		}
		if _, _, errno := psx.Syscall6(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0, 0); errno != 0 {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, errno)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var none [2]unix.CapUserData
	if _, _, errno := psx.Syscall3(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&none[0])), 0); errno != 0 {
		return fmt.Errorf("clear capabilities: %w", errno)
	}
	return checkNoCaps()
}
