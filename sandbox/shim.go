package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"github.com/opencontainers/runc/libcontainer/configs"
	"golang.org/x/sys/unix"

	"github.com/sbx-sandbox/sbx/canary"
	"github.com/sbx-sandbox/sbx/internal/safetext"
)

// shimEnv carries the [ShimConfig] from sbx to the shim; the shim removes it
// from the environment before it starts the program.
const shimEnv = "_SBX_SHIM"

// ShimConfig is what the shim needs to know besides the program's argv.
type ShimConfig struct {
	// Terminal is set when stdin is the sandbox's pty: the program then
	// becomes the terminal's foreground process group.
	Terminal bool `json:"terminal,omitempty"`
	// LifelineFD is the read end of a pipe that only sbx holds open: EOF
	// on it means sbx is gone, and the shim ends the sandbox.
	LifelineFD int `json:"lifeline,omitempty"`
	// NetCanary makes the shim prove the network before it starts the
	// program (one of the NetCanary* proofs; "": none, the run shares the
	// host's network).
	NetCanary string `json:"netCanary,omitempty"`
	// Landlock, when set, is applied to the shim and so to the program
	// (with UserNS, to the exec step and so to the program only).
	Landlock *FilePolicy `json:"landlock,omitempty"`
	// UserNS, for a rootless sandbox, starts the program through the exec
	// step ([runExecStep]) in a user namespace of its own that maps the
	// user's ids back, so that it runs as the user inside too.
	UserNS *UserNS `json:"userns,omitempty"`
	// Seccomp is the filter the exec step stacks on the program (with
	// UserNS: the shim's own filter lets it create that namespace).
	Seccomp *configs.Seccomp `json:"seccomp,omitempty"`
	// GoFD is, for the exec step, a pipe on which the shim says that it
	// has dropped its capabilities: the program starts only then.
	GoFD int `json:"goFD,omitempty"`
	// Nested tells the exec step that it runs in a user namespace of its
	// own (not the fallback).
	Nested bool `json:"nested,omitempty"`
	// AwaitLSM makes the shim wait for [Sandbox.Release] and then prove
	// the BPF LSM tier before anything else (see goahead.go).
	AwaitLSM bool `json:"awaitLSM,omitempty"`
	// ReadyFD is, with AwaitLSM, the write end of a pipe on which the
	// shim tells sbx that it runs (libcontainer's init is gone).
	ReadyFD int `json:"readyFD,omitempty"`
}

// The proofs of ShimConfig.NetCanary.
const (
	// NetCanaryNoInet: socket(AF_INET) and socket(AF_INET6) must fail
	// with EPERM (sbx run --net none; see canary.Net).
	NetCanaryNoInet = "no-inet"
	// NetCanaryLoopbackWall: loopback works, and the network wall refuses
	// a connect beyond it with EPERM (--net loopback as root; see
	// canary.Loopback).
	NetCanaryLoopbackWall = "loopback-wall"
	// NetCanaryLoopbackNetns: loopback works, and the namespace has no
	// route beyond it (--net loopback rootless, where there is no wall).
	NetCanaryLoopbackNetns = "loopback-netns"
)

// UserNS are the user's ids on the host. A rootless sandbox's user
// namespace maps them to 0, as libcontainer's bootstrap needs; the
// program's own namespace, nested in it, maps them back to themselves.
type UserNS struct {
	UID int `json:"uid"`
	GID int `json:"gid"`
}

// ExitNotFound and ExitNotExecutable are the shim's (and sbx's) statuses for
// a command that does not exist or cannot be executed, as in POSIX shells.
const (
	ExitNotFound      = 127
	ExitNotExecutable = 126
)

// forwarded are the signals the shim passes on to the program's process group.
var forwarded = []os.Signal{
	unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT,
	unix.SIGUSR1, unix.SIGUSR2, unix.SIGWINCH, unix.SIGCONT, unix.SIGALRM,
}

// RunShim is PID 1 of a sandbox. It looks the program up on PATH, starts it
// in its own process group, forwards signals to that group, reaps every
// orphan, and returns the program's status (128+N for signal N) as soon as
// the program itself exits; the kernel then kills whatever the program left
// behind, since the PID namespace ends with its PID 1.
func RunShim(args []string) int {
	// go-landlock restricts each OS thread on its own, so each thread of
	// the shim ends up in a Landlock domain of its own, and the signal
	// scope lets a domain signal only itself and its descendants. The
	// program is therefore started, and signalled, from this one thread.
	runtime.LockOSThread()
	prewarmThreads(shimThreads)
	// The program runs as the shim's uid: without this it could ptrace
	// the shim in all but name (/proc/1/mem, pidfd_getfd of the lifeline,
	// /proc/1/environ). The program's own exec makes it dumpable again.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "sbx: refusing to run: shim: set non-dumpable: %v\n", err)
		return 125
	}
	cfg, err := takeShimConfig(shimEnv, args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sbx: shim: %v\n", err)
		return 125
	}
	if cfg.AwaitLSM {
		if code := awaitRelease(cfg.ReadyFD, cfg.LifelineFD); code != 0 {
			return code
		}
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwarded...)
	orphaned := make(chan struct{})
	if cfg.LifelineFD > 0 {
		// Inherited across the exec of the shim: keep it from the program.
		unix.CloseOnExec(cfg.LifelineFD)
		life := os.NewFile(uintptr(cfg.LifelineFD), "lifeline")
		go func() {
			var b [1]byte
			_, _ = life.Read(b[:]) // returns only when sbx has gone
			close(orphaned)
		}()
	}

	attr := &syscall.SysProcAttr{Setpgid: true}
	if cfg.Terminal {
		attr.Foreground = true
		attr.Ctty = 0
	}
	var proc *os.Process
	if cfg.UserNS != nil {
		// The exec step sets up the program's confinement itself (the
		// shim stays outside its Landlock domain so that it may signal
		// it) and then becomes the program.
		var goAhead *os.File
		if proc, goAhead, err = startExecStep(cfg, args, attr); err != nil {
			fmt.Fprintf(os.Stderr, "sbx: refusing to run: shim: %v\n", err)
			return 125
		}
		if err := dropShimCaps(); err != nil {
			proc.Kill()
			fmt.Fprintf(os.Stderr, "sbx: refusing to run: shim: %v\n", err)
			return 125
		}
		// After dropShimCaps: libpsx takes SIGSYS for itself.
		if err := ignoreFatalSignals(); err != nil {
			proc.Kill()
			fmt.Fprintf(os.Stderr, "sbx: refusing to run: shim: %v\n", err)
			return 125
		}
		_, err = goAhead.Write([]byte{1})
		goAhead.Close()
		// EPIPE: the step has ended already; its status is the run's.
		if err != nil && !errors.Is(err, unix.EPIPE) {
			proc.Kill()
			fmt.Fprintf(os.Stderr, "sbx: refusing to run: shim: start the program: %v\n", err)
			return 125
		}
	} else {
		if code := confine(cfg); code != 0 {
			return code
		}
		path, code := lookPath(args[0])
		if code != 0 {
			return code
		}
		if err := ignoreFatalSignals(); err != nil {
			fmt.Fprintf(os.Stderr, "sbx: refusing to run: shim: %v\n", err)
			return 125
		}
		proc, err = os.StartProcess(path, args, &os.ProcAttr{
			Env:   os.Environ(),
			Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
			Sys:   attr,
		})
		if err != nil {
			fmt.Fprintf(os.Stderr, "sbx: %s: %v\n", safetext.Escape(args[0]), unwrapExecErr(err))
			if errors.Is(err, unix.ENOENT) {
				return ExitNotFound
			}
			return ExitNotExecutable
		}
	}
	pid := proc.Pid
	signal.Ignore(unix.SIGTTOU, unix.SIGTTIN)

	done := make(chan int, 1)
	go func() { done <- reap(pid) }()
	for {
		select {
		case s := <-sigs:
			forward(pid, s.(unix.Signal))
		case code := <-done:
			return code
		case <-orphaned:
			// PID 1 returning takes every process of the sandbox with it.
			fmt.Fprintln(os.Stderr, "sbx: supervisor died: ending the sandbox")
			return 128 + int(unix.SIGKILL)
		}
	}
}

// forward passes sig to the program's process group (a shell's children
// too) and to the program itself if it has left that group. It is sent to
// the program once: a second copy could arrive after the program has
// handled the first, and a trap would then run twice.
func forward(pid int, sig unix.Signal) {
	groupErr := unix.Kill(-pid, sig)
	if pgid, err := unix.Getpgid(pid); groupErr != nil || (err == nil && pgid != pid) {
		_ = unix.Kill(pid, sig)
	}
}

// fatalSignals are the signals on which Go's runtime ends the process
// even when another process sent them: the faults (it cannot tell a
// fault from a signal sent with rt_sigqueueinfo, whose si_code the
// sender picks) and SIGABRT. The rest of the catchable signals are
// harmless to the shim: forwarded, or handled and dropped by the runtime.
var fatalSignals = []unix.Signal{
	unix.SIGILL, unix.SIGTRAP, unix.SIGABRT, unix.SIGBUS, unix.SIGFPE,
	unix.SIGSEGV, unix.SIGSTKFLT, unix.SIGSYS,
}

// kernelSigaction is the kernel's struct sigaction (not libc's) on amd64
// and arm64: handler, flags, restorer, mask.
type kernelSigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

// sigIgn is SIG_IGN.
const sigIgn = 1

// ignoreFatalSignals sets [fatalSignals] to SIG_IGN in the kernel, behind
// the Go runtime's back (signal.Ignore leaves the runtime's handler of a
// fault in place). The kernel delivers a signal from inside a PID
// namespace to its init only when init handles it, so the program's
// kill(1, SIGSEGV) or rt_sigqueueinfo(1, SIGSEGV, ...) is then dropped
// instead of crashing the shim and losing the program's status; SIGKILL
// and SIGSTOP from inside are dropped by the kernel already. A real fault
// of the shim still kills it (the kernel resets an ignored fault signal
// to its default), without the Go traceback. The runtime still counts
// these signals as its own, so a child it starts gets them back at their
// defaults; they must be set before the program can run, and after
// anything that installs its own handler (libpsx takes SIGSYS).
func ignoreFatalSignals() error {
	sa := kernelSigaction{handler: sigIgn}
	for _, sig := range fatalSignals {
		_, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&sa)), 0, 8, 0, 0)
		if e != 0 {
			return fmt.Errorf("ignore %v as PID 1: %w", sig, os.NewSyscallError("rt_sigaction", e))
		}
	}
	return nil
}

// takeShimConfig decodes the [ShimConfig] in the environment variable env
// (none: the zero config) and removes the variable, so that the program
// does not inherit it; args must name a command.
func takeShimConfig(env string, args []string) (ShimConfig, error) {
	var cfg ShimConfig
	raw := os.Getenv(env)
	os.Unsetenv(env)
	if raw != "" {
		if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
			return cfg, fmt.Errorf("bad config: %w", err)
		}
	}
	if len(args) == 0 {
		return cfg, errors.New("no command")
	}
	return cfg, nil
}

// confine applies cfg's Landlock policy to the calling thread's process
// and proves it and the network wall with their canaries; it prints why
// and returns 125 when either does not hold.
func confine(cfg ShimConfig) int {
	if cfg.Landlock != nil {
		if err := applyLandlock(*cfg.Landlock); err != nil {
			fmt.Fprintf(os.Stderr, "sbx: refusing to run: %v\n", err)
			return 125
		}
	}
	if err := netCanary(cfg.NetCanary); err != nil {
		fmt.Fprintf(os.Stderr, "sbx: refusing to run: %v\n", err)
		return 125
	}
	return 0
}

// netCanary runs the network proof named by which (see ShimConfig.NetCanary).
func netCanary(which string) error {
	switch which {
	case "":
		return nil
	case NetCanaryNoInet:
		return canary.Net()
	case NetCanaryLoopbackWall:
		return canary.Loopback(true)
	case NetCanaryLoopbackNetns:
		return canary.Loopback(false)
	}
	return fmt.Errorf("net canary: unknown proof %q", which)
}

// shimThreads is how many idle OS threads the shim's Go runtime gets before
// the program starts (see prewarmThreads): more than the shim ever blocks
// at once (lifeline read, wait4, the signal and main goroutines, sysmon;
// 4 still lost the race in 1 of 10 fork-bomb runs, 6 never in 20).
const shimThreads = 8

// prewarmThreads makes the Go runtime start n more OS threads now, which
// then stay idle in its pool. The shim shares the program's pids limit, and
// the limit counts threads: once a fork bomb holds every slot, a runtime
// that needs a new thread (to run a goroutine while others block in
// syscalls) cannot create one and aborts, losing the program's status.
// With threads to spare it never has to.
func prewarmThreads(n int) {
	locked, release := make(chan struct{}), make(chan struct{})
	done := make(chan struct{})
	for range n {
		go func() {
			// A goroutine wired to its thread and blocked keeps that
			// thread busy, so the next one needs a thread of its own.
			runtime.LockOSThread()
			locked <- struct{}{}
			<-release
			// Unlocked before it returns, the thread goes back to the
			// pool instead of exiting.
			runtime.UnlockOSThread()
			done <- struct{}{}
		}()
	}
	for range n {
		<-locked
	}
	close(release)
	for range n {
		<-done
	}
}

// reap waits for every child (PID 1 inherits orphans) and returns the
// status of the one with pid main.
func reap(main int) int {
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return 125
		}
		if got != main {
			continue
		}
		switch {
		case ws.Exited():
			return ws.ExitStatus()
		case ws.Signaled():
			return 128 + int(ws.Signal())
		}
	}
}

// lookPath resolves name like a shell: on PATH unless it contains a slash.
// It prints the error and returns 127 or 126 when the command cannot run.
func lookPath(name string) (string, int) {
	path, err := exec.LookPath(name)
	if err == nil {
		return path, 0
	}
	var execErr *exec.Error
	if errors.As(err, &execErr) && errors.Is(execErr.Err, exec.ErrNotFound) {
		fmt.Fprintf(os.Stderr, "sbx: %s: command not found\n", safetext.Escape(name))
		return "", ExitNotFound
	}
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(os.Stderr, "sbx: %s: no such file or directory\n", safetext.Escape(name))
		return "", ExitNotFound
	}
	fmt.Fprintf(os.Stderr, "sbx: %s: %v\n", safetext.Escape(name), unwrapExecErr(err))
	return "", ExitNotExecutable
}

func unwrapExecErr(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err.Error()
	}
	return strings.TrimPrefix(err.Error(), "exec: ")
}

// shimEnviron returns env with the shim's config added.
func shimEnviron(env []string, cfg ShimConfig) ([]string, error) {
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("encode shim config: %w", err)
	}
	return append(append([]string{}, env...), shimEnv+"="+string(raw)), nil
}
