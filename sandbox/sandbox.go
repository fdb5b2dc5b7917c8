package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/opencontainers/cgroups/fscommon"
	"github.com/opencontainers/runc/libcontainer"
	"golang.org/x/sys/unix"
)

// Stdio are the program's standard streams when it has no terminal. *os.File
// values are handed to the program as they are (no copying, no buffering).
type Stdio struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Sandbox is one created sandbox. Its program is blocked right before exec
// until [Sandbox.Exec], so that policies keyed by its cgroup (BPF) can be in
// place before the program runs its first instruction.
type Sandbox struct {
	spec    *Spec
	dirs    Dirs
	c       *libcontainer.Container
	p       *libcontainer.Process
	console *os.File // pty master, when Spec.Terminal
	// lifeline is the write end of a pipe whose read end the shim holds:
	// when sbx dies, however it dies, the shim sees EOF and ends the
	// sandbox (PDEATHSIG would not do: libcontainer's init is a grandchild
	// whose parent-death signal is reset by clone).
	lifeline *os.File
	// owner is the run dir's owner record, flock'ed while the sandbox
	// lives (see ownerAlive).
	owner *os.File
	// ready is the read end of the pipe on which a shim started with
	// ShimConfig.AwaitLSM says that it runs (see goahead.go).
	ready *os.File
	state *libcontainer.State
	// shimSignal is what the shim died of, if it did (see Wait).
	shimSignal syscall.Signal
	// watch ends the sandbox if sbx dies before the shim watches its
	// lifeline (see startWatcher).
	watch *watcher
}

// Dirs are the host directories sbx keeps its state in.
type Dirs struct {
	// Root holds one directory per run (rootfs and owner record) under
	// Root/run and libcontainer's state under Root/lc.
	Root string
}

func (d Dirs) runDir(id string) string { return filepath.Join(d.Root, "run", id) }
func (d Dirs) lcRoot() string          { return filepath.Join(d.Root, "lc") }

// Create builds the sandbox described by spec and starts its PID 1 up to the
// point right before exec. On error nothing is left behind.
func Create(spec *Spec, dirs Dirs, stdio Stdio) (_ *Sandbox, retErr error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	// From here to libcontainer's cgroup attach nothing needs the cgroup
	// lock that the warm-up holds while it waits (see warmCgroupAttach).
	warmCgroupAttach()
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find sbx binary: %w", err)
	}
	if self, err = filepath.EvalSymlinks(self); err != nil {
		return nil, fmt.Errorf("find sbx binary: %w", err)
	}
	run := dirs.runDir(spec.ID)
	rootfs := filepath.Join(run, "rootfs")
	if err := os.MkdirAll(filepath.Dir(run), 0o700); err != nil {
		return nil, fmt.Errorf("create state dir: %w", err)
	}
	// The run dir appears whole, owner record included, so that a
	// concurrent Reclaim never takes a sandbox being created for dead.
	tmp, err := os.MkdirTemp(filepath.Dir(run), ".new-"+spec.ID+"-")
	if err != nil {
		return nil, fmt.Errorf("create run dir: %w", err)
	}
	owner, err := writeOwner(tmp)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	if err := os.Rename(tmp, run); err != nil {
		owner.Close()
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("create run dir: %w", err)
	}
	s := &Sandbox{spec: spec, dirs: dirs, owner: owner}
	defer func() {
		if retErr != nil {
			_ = s.Destroy()
		}
	}()
	if err := os.Mkdir(rootfs, 0o755); err != nil {
		return nil, fmt.Errorf("create rootfs: %w", err)
	}
	layout := HostLayout()
	if err := prepareRootfs(rootfs, layout); err != nil {
		return nil, err
	}
	cfg, err := spec.Config(rootfs, self, layout)
	if err != nil {
		return nil, err
	}
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("create lifeline pipe: %w", err)
	}
	defer lifeR.Close()
	s.lifeline = lifeW
	shimCfg := spec.Shim
	shimCfg.Terminal = spec.Terminal
	shimCfg.LifelineFD = 3
	if spec.Landlock {
		pol := spec.LandlockPolicy(layout)
		shimCfg.Landlock = &pol
	}
	if spec.Rootless {
		if shimCfg.Seccomp, err = SeccompWith(spec.seccompOptions()); err != nil {
			return nil, err
		}
		shimCfg.UserNS = &UserNS{UID: spec.UID, GID: spec.GID}
	}
	extra := []*os.File{lifeR}
	if shimCfg.AwaitLSM {
		readyW, err := s.readyPipe()
		if err != nil {
			return nil, err
		}
		defer readyW.Close() // the shim's copy stays; EOF when it dies
		extra = append(extra, readyW)
		shimCfg.ReadyFD = 4
	}
	sabotage(cfg, &shimCfg)
	c, err := libcontainer.Create(dirs.lcRoot(), spec.ID, cfg)
	if err != nil {
		return nil, fmt.Errorf("create container: %w", err)
	}
	s.c = c
	env, err := shimEnviron(spec.Env, shimCfg)
	if err != nil {
		return nil, err
	}
	args := append([]string{ShimPath}, spec.Args...)
	if n, limit := execSize(ShimPath, args, env), argMax(); n > limit {
		return nil, fmt.Errorf("argument list too long: the program's arguments and environment take %d bytes in the sandbox, the kernel accepts %d", n, limit)
	}
	uid, gid := spec.UID, spec.GID
	if spec.Rootless {
		uid, gid = 0, 0 // the ids the user namespace maps to spec's
	}
	p := &libcontainer.Process{
		Args: args,
		Env:  env,
		Cwd:  spec.Cwd,
		UID:  uid, GID: gid,
		Init: true,
		// fd 3 (and 4) in the sandbox, closed by the shim before the
		// program runs.
		ExtraFiles: extra,
	}
	var consoleSock *os.File
	if spec.Terminal {
		parent, child, err := socketPair()
		if err != nil {
			return nil, err
		}
		defer parent.Close()
		defer child.Close()
		p.ConsoleSocket = child
		consoleSock = parent
	} else {
		p.Stdin, p.Stdout, p.Stderr = stdio.Stdin, stdio.Stdout, stdio.Stderr
	}
	if s.watch, err = startWatcher(self); err != nil {
		return nil, err
	}
	for _, d := range spec.cgroupDirs() {
		s.watch.watch("cg", d)
	}
	if err := onStartThread(func() error { return c.Start(p) }); err != nil {
		return nil, fmt.Errorf("start sandbox: %w", err)
	}
	s.p = p
	if consoleSock != nil {
		f, err := recvFd(consoleSock)
		if err != nil {
			return nil, fmt.Errorf("receive pty from sandbox: %w", err)
		}
		s.console = f
	}
	st, err := c.State()
	if err != nil {
		return nil, fmt.Errorf("read sandbox state: %w", err)
	}
	s.state = st
	s.watch.watch("pid", strconv.Itoa(st.InitProcessPid))
	return s, nil
}

// Console returns the pty master of a sandbox created with Spec.Terminal.
func (s *Sandbox) Console() *os.File { return s.console }

// CgroupPaths returns the sandbox's cgroup directories by controller; on
// cgroup v2 (and for the v2 part of a hybrid layout) the key is "".
func (s *Sandbox) CgroupPaths() map[string]string { return s.state.CgroupPaths }

// Pid returns the host PID of the sandbox's PID 1 (the shim).
func (s *Sandbox) Pid() int { return s.state.InitProcessPid }

// Exec lets the program run.
func (s *Sandbox) Exec() error {
	if err := s.c.Exec(); err != nil {
		return fmt.Errorf("exec program: %w", err)
	}
	// From here the shim ends the sandbox when sbx dies (its lifeline);
	// the watcher waits a moment before it steps in.
	s.watch.watch("grace", watchGrace.String())
	return nil
}

// watchGrace is how long the watcher leaves the shim to end the sandbox
// after sbx died, once the shim runs.
const watchGrace = 500 * time.Millisecond

// Signal sends sig to the shim, which forwards it to the program.
func (s *Sandbox) Signal(sig os.Signal) error { return s.p.Signal(sig) }

// Kill kills every process of the sandbox at once.
func (s *Sandbox) Kill() error {
	if s.c == nil || s.p == nil { // never started: nothing to kill
		return nil
	}
	err := s.c.Signal(unix.SIGKILL)
	if errors.Is(err, libcontainer.ErrNotRunning) {
		return nil
	}
	return err
}

// Wait waits for the shim to exit and returns the program's exit status
// (128+N for a signal). The shim returns the program's status as its own
// exit code; if the shim itself died of a signal (only SIGKILL can do that:
// sbx's own Kill, the OOM killer, or another process of the host), Wait
// returns 128+N and [Sandbox.ShimSignal] says so.
func (s *Sandbox) Wait() (int, error) {
	ps, err := s.p.Wait()
	if ps == nil {
		return 0, fmt.Errorf("wait for sandbox: %w", err)
	}
	ws := ps.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		s.shimSignal = ws.Signal()
		return 128 + int(ws.Signal()), nil
	}
	return ws.ExitStatus(), nil
}

// ShimSignal returns the signal the shim (the sandbox's PID 1) died of, or
// 0 when it exited with the program's status. Call it after Wait.
func (s *Sandbox) ShimSignal() syscall.Signal { return s.shimSignal }

// OOMKilled reports whether the kernel's OOM killer killed a process of the
// sandbox because of its memory limit. Call it before [Sandbox.Destroy].
func (s *Sandbox) OOMKilled() bool {
	if s.state == nil {
		return false
	}
	for ctl, dir := range s.state.CgroupPaths {
		var file, key string
		switch ctl {
		case "memory":
			file, key = "memory.oom_control", "oom_kill"
		case "":
			file, key = "memory.events", "oom_kill"
		default:
			continue
		}
		if n, err := fscommon.GetValueByKey(dir, file, key); err == nil && n > 0 {
			return true
		}
	}
	return false
}

// Destroy kills what is left of the sandbox and removes its cgroups, state
// and rootfs. It is safe to call more than once and on a partly created
// sandbox.
func (s *Sandbox) Destroy() error {
	var errs []error
	if s.console != nil {
		s.console.Close()
		s.console = nil
	}
	if s.ready != nil {
		s.ready.Close()
		s.ready = nil
	}
	if s.lifeline != nil {
		s.lifeline.Close()
		s.lifeline = nil
	}
	if s.c != nil {
		_ = s.Kill()
		if err := destroyWithRetry(s.c); err != nil {
			errs = append(errs, fmt.Errorf("destroy container: %w", err))
		}
		s.c = nil
	}
	if err := os.RemoveAll(s.dirs.runDir(s.spec.ID)); err != nil {
		errs = append(errs, fmt.Errorf("remove run dir: %w", err))
	}
	s.watch.close() // nothing left for it to kill
	if s.owner != nil {
		s.owner.Close() // held to the end: a Reclaim meanwhile leaves the run alone
		s.owner = nil
	}
	return errors.Join(errs...)
}

// CleanupTimeout bounds how long Destroy waits for the kernel to finish
// tearing down the sandbox's last processes before it reports failure.
const CleanupTimeout = 10 * time.Second

// destroyWithRetry retries libcontainer's Destroy while the kernel is still
// tearing the cgroup's last processes down (rmdir returns EBUSY).
func destroyWithRetry(c *libcontainer.Container) error {
	deadline := time.Now().Add(CleanupTimeout)
	for {
		err := c.Destroy()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func socketPair() (*os.File, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, os.NewSyscallError("socketpair", err)
	}
	return os.NewFile(uintptr(fds[0]), "console-parent"), os.NewFile(uintptr(fds[1]), "console-child"), nil
}

// recvFd receives one file descriptor sent with SCM_RIGHTS.
func recvFd(sock *os.File) (*os.File, error) {
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(int(sock.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, os.NewSyscallError("recvmsg", err)
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil || len(msgs) != 1 {
			return nil, fmt.Errorf("no file descriptor received")
		}
		fds, err := unix.ParseUnixRights(&msgs[0])
		if err != nil || len(fds) != 1 {
			return nil, fmt.Errorf("no file descriptor received")
		}
		return os.NewFile(uintptr(fds[0]), string(buf[:n])), nil
	}
}

// argMax is what execve(2) accepts for the strings of argv and envp
// together: a quarter of the stack limit, and at most 3/4 of 6 MiB.
func argMax() int {
	const ceiling = 6 << 20 / 4 * 3
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_STACK, &rl); err != nil || rl.Cur == unix.RLIM_INFINITY {
		return ceiling
	}
	return min(int(rl.Cur/4), ceiling)
}

// execSize is what execve(2) counts against argMax: the file name, and each
// string with its NUL and its pointer.
func execSize(file string, argv, env []string) int {
	n := len(file) + 1
	for _, list := range [][]string{argv, env} {
		for _, s := range list {
			n += len(s) + 1 + 8
		}
	}
	return n
}
