package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/sbx-sandbox/sbx/bpf"
	"github.com/sbx-sandbox/sbx/egress"
	"github.com/sbx-sandbox/sbx/sandbox"
	"github.com/sbx-sandbox/sbx/stage"
	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// Result is how a run ended.
type Result struct {
	// ExitCode is the program's status: its exit code, 128+N for signal N,
	// [ExitTimeout] on timeout, 127/126 when the command was not found or
	// not executable.
	ExitCode int
	TimedOut bool
	// Cancelled is set when ctx was cancelled and the sandbox killed.
	Cancelled bool
	// OOM is set when the kernel killed a process for the memory limit.
	OOM      bool
	Duration time.Duration
	ID       string
	// CleanupErr is set when teardown could not confirm the sandbox gone
	// (its processes killed, cgroups and state removed); Run then also
	// returns it wrapped in a [*CleanupError].
	CleanupErr error
}

// CleanupError is returned by Run when the program ran but the sandbox could
// not be torn down completely.
type CleanupError struct{ Err error }

func (e *CleanupError) Error() string { return "tear down sandbox: " + e.Err.Error() }
func (e *CleanupError) Unwrap() error { return e.Err }

// forwarded are the signals sbx passes on to the sandbox.
var forwarded = []os.Signal{
	unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT,
	unix.SIGUSR1, unix.SIGUSR2, unix.SIGWINCH,
}

// DefaultStateDir is where root keeps run state.
const DefaultStateDir = "/run/sbx"

// Run runs o.Args in a new sandbox and waits for it. Cancelling ctx kills the
// sandbox. Teardown always completes before Run returns.
func Run(ctx context.Context, o Options) (res Result, retErr error) {
	start := time.Now()
	if err := o.fill(); err != nil {
		return res, err
	}
	if o.Terminal && (o.Stdin == nil || !term.IsTerminal(int(o.Stdin.Fd()))) {
		return res, errors.New("--tty: terminal mode needs a terminal on stdin")
	}
	if Rootless() {
		if err := privateDir(o.StateDir); err != nil {
			return res, err
		}
	}
	dirs := sandbox.Dirs{Root: o.StateDir}
	if ids, err := sandbox.Reclaim(dirs); err != nil {
		fmt.Fprintf(o.Log, "sbx: warning: cleaning up after an earlier run: %v\n", err)
	} else if len(ids) > 0 {
		for _, id := range ids {
			// Their throwaway homes (ids are validated, so the
			// pattern cannot reach elsewhere).
			homes, _ := filepath.Glob(filepath.Join(os.TempDir(), "sbx-home-"+id+"-*"))
			for _, h := range homes {
				_ = os.RemoveAll(h)
			}
		}
		fmt.Fprintf(o.Log, "sbx: cleaned up %d sandbox(es) left by a killed sbx\n", len(ids))
	}
	stagingState := filepath.Join(o.StateDir, "staging")
	if err := stage.Recover(stagingState, o.Log); err != nil {
		fmt.Fprintf(o.Log, "sbx: warning: recovering staged files of an earlier run: %v\n", err)
	}
	spec, cleanup, err := o.spec()
	if err != nil {
		return res, err
	}
	defer cleanup()
	res.ID = spec.ID

	plan, err := stagePaths(spec, &o, stagingState)
	if err != nil {
		return res, err
	}
	// Copy-back runs after the sandbox is destroyed (deferred earlier, so
	// it runs later), on every exit path.
	defer func() {
		if err := plan.Finish(); err != nil {
			fmt.Fprintf(o.Log, "sbx: copying staged files back: %v (run sbx run again or sbx recover to retry)\n", err)
		}
	}()
	spec.Args = plan.Argv()

	// Signals are caught from here on, so that a Ctrl-C during setup still
	// tears down what was built.
	sigs := make(chan os.Signal, 16)
	if o.ForwardSignals {
		signal.Notify(sigs, forwarded...)
		defer signal.Stop(sigs)
	}

	rep := newReporter(o.Log, o.Violations)
	if o.reporter != nil {
		rep = o.reporter
	}
	defer rep.finish()
	var wall *netWall
	var lsm *lsmTier
	readyTracer := func() {}
	if !spec.Rootless {
		if wall, err = openNetWall(); err != nil {
			return res, err
		}
		defer wall.close()
		tracer := startTracer(wall)
		defer tracer.close()
		defer tracer.ready(io.Discard) // on error paths before Exec
		readyTracer = func() { tracer.ready(o.Log) }
		if o.tiers.bpfLSM {
			if lsm, err = openLSMTier(wall); err != nil {
				return res, err
			}
			defer lsm.close()
			spec.Shim.AwaitLSM = true // registered after Exec, see below
		}
		spec.AllowInetSockets = true // the wall denies them, and reports it
	}
	// With the host network there is no wall to prove; rootless, seccomp
	// refuses inet sockets itself (EPERM), which the canary proves.
	spec.Shim.NetCanary = !o.HostNetwork
	if len(o.allow) > 0 {
		spec.ProxyPort = proxyAddr.Port()
	}

	var term *terminal
	if o.Terminal {
		term, err = newTerminal(o.Stdin)
		if err != nil {
			return res, err
		}
		defer term.restore()
	}
	if o.rootOnly != nil {
		spec.Masked = append(spec.Masked, <-o.rootOnly...)
	}
	sb, err := sandbox.Create(spec, dirs, sandbox.Stdio{Stdin: stdinOrNil(o.Stdin), Stdout: o.Stdout, Stderr: o.Stderr})
	if err != nil {
		if spec.Rootless {
			err = usernsError(err)
		}
		return res, fmt.Errorf("set up sandbox: %w", err)
	}
	defer func() {
		if err := sb.Destroy(); err != nil {
			res.CleanupErr = err
			if retErr == nil {
				retErr = &CleanupError{Err: err}
			}
		}
	}()
	rep.setSandbox(sb.Pid(), spec.Workspace, spec.Write)
	if wall != nil {
		rep.readMounts(sb.Pid()) // the tracer comes with the wall
		if err := wall.watch(sb.CgroupPaths()[""], rep); err != nil {
			return res, err
		}
	}
	netPolicy := o.netPolicy()
	if netPolicy != (bpf.Policy{}) && wall != nil {
		if err := wall.allow(sb.CgroupPaths()[""], netPolicy); err != nil {
			return res, err
		}
	}
	if len(o.allow) > 0 {
		// Closed before the sandbox is destroyed and before rep.finish,
		// so every denial is reported.
		px, err := startEgress(sb, o.allow, rep)
		if err != nil {
			return res, err
		}
		defer px.close(o.Log)
	}
	var copied chan struct{}
	if term != nil {
		copied = term.attach(sb.Console(), o.Stdout)
	}
	readyTracer()
	if err := sb.Exec(); err != nil {
		return res, err
	}
	if lsm != nil {
		// Only once the shim runs (libcontainer's init is gone) is the
		// sandbox registered with the BPF LSM tier; the shim holds the
		// program back until Release and proves the tier first (see
		// sandbox/goahead.go).
		if err := sb.AwaitShim(); err != nil {
			return res, err
		}
		if err := lsm.add(spec, sb.CgroupPaths()[""], sb.Pid(), netPolicy); err != nil {
			return res, err
		}
		if err := sb.Release(); err != nil {
			return res, err
		}
	}
	waited := make(chan int, 1)
	waitErr := make(chan error, 1)
	go func() {
		code, err := sb.Wait()
		if err != nil {
			waitErr <- err
			return
		}
		waited <- code
	}()
	var timeout <-chan time.Time
	if o.Timeout > 0 {
		t := time.NewTimer(o.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	for {
		select {
		case code := <-waited:
			res.ExitCode = code
			if res.TimedOut {
				res.ExitCode = ExitTimeout
			}
			res.OOM = sb.OOMKilled()
			if copied != nil {
				// The pty has the program's last output; drain it.
				select {
				case <-copied:
				case <-time.After(2 * time.Second):
				}
			}
			res.Duration = time.Since(start)
			return res, nil
		case err := <-waitErr:
			return res, err
		case s := <-sigs:
			if s == unix.SIGWINCH && term != nil {
				term.resize()
				continue
			}
			_ = sb.Signal(s)
		case <-timeout:
			res.TimedOut = true
			_ = sb.Kill()
		case <-ctx.Done():
			res.Cancelled = true
			_ = sb.Kill()
			ctx = context.Background() // fire once
		}
	}
}

// stdinOrNil keeps a nil *os.File from becoming a non-nil io.Reader.
func stdinOrNil(f *os.File) io.Reader {
	if f == nil {
		return nil
	}
	return f
}

func (o *Options) fill() error {
	if len(o.Args) == 0 || o.Args[0] == "" {
		return errors.New("no command given (usage: sbx run [flags] -- CMD [ARGS...])")
	}
	if o.HostEnv == nil {
		o.HostEnv = os.Environ()
	}
	if o.Log == nil {
		o.Log = os.Stderr
	}
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	if o.StateDir == "" {
		o.StateDir = DefaultStateDir
		if Rootless() {
			o.StateDir = UserStateDir(o.hostLookup)
		}
	}
	if o.Cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("get working directory: %w", err)
		}
		o.Cwd = wd
	}
	if o.Workspace == "" {
		o.Workspace = o.Cwd
	}
	allow, err := egress.ParseAllowlist(o.AllowHosts)
	if err != nil {
		return fmt.Errorf("--allow-host: %w", err)
	}
	o.allow = allow
	return nil
}

// hostLookup returns a lookup function over o.HostEnv.
func (o *Options) hostLookup(k string) (string, bool) {
	for i := len(o.HostEnv) - 1; i >= 0; i-- {
		if name, v, ok := strings.Cut(o.HostEnv[i], "="); ok && name == k {
			return v, true
		}
	}
	return "", false
}

// spec resolves the options against the host into a sandbox spec. The
// returned cleanup removes a throwaway home.
func (o *Options) spec() (*sandbox.Spec, func(), error) {
	nop := func() {}
	rootless := Rootless()
	if rootless && os.Geteuid() != os.Getuid() {
		return nil, nop, errors.New("sbx must not be setuid: run it as yourself (rootless) or with sudo")
	}
	who, err := currentInvoker(o.hostLookup)
	if err != nil {
		return nil, nop, err
	}
	o.who = who
	cwd, err := filepath.EvalSymlinks(o.Cwd)
	if err != nil {
		return nil, nop, fmt.Errorf("working directory %s: %w", o.Cwd, err)
	}
	o.Cwd = cwd
	ws, err := resolvePath("workspace", o.Workspace, cwd, false)
	if err != nil {
		return nil, nop, err
	}
	if ws == "/" {
		return nil, nop, errors.New("workspace /: the whole host cannot be the workspace (pick a project directory with --workspace)")
	}
	var ro, rw []string
	for _, p := range o.ReadOnly {
		r, err := resolvePath("--ro", p, cwd, true)
		if err != nil {
			return nil, nop, err
		}
		ro = append(ro, r)
	}
	for _, p := range o.ReadWrite {
		r, err := resolvePath("--rw", p, cwd, true)
		if err != nil {
			return nil, nop, err
		}
		rw = append(rw, r)
	}
	id, err := newID()
	if err != nil {
		return nil, nop, err
	}
	homeInside := who.home
	if homeInside == "" || homeInside == "/" || !filepath.IsAbs(homeInside) {
		homeInside = "/home/sbx"
	}
	env, err := cleanEnv(o, who, homeInside)
	if err != nil {
		return nil, nop, err
	}
	// Every check that can refuse the run comes before the first thing
	// written to disk (the home).
	t, err := selectTiers(o.Policy, o.StateDir, rootless)
	if err != nil {
		return nil, nop, err
	}
	var cgroup string
	if rootless {
		if err := rootlessNetwork(o); err != nil {
			return nil, nop, err
		}
		deleg, derr := sandbox.HostDelegation()
		if cgroup, err = rootlessLimits(o, id, deleg, derr); err != nil {
			return nil, nop, err
		}
	}
	home, cleanup, err := o.homeDir(who, id, cwd)
	if err != nil {
		return nil, nop, err
	}
	var protected []string
	if o.Write {
		protected = protectedPaths(ws, rw)
	}
	wd := ws
	if within(cwd, ws) {
		wd = cwd
	}
	spec := &sandbox.Spec{
		ID:         id,
		Args:       o.Args,
		Env:        env,
		Cwd:        wd,
		Workspace:  ws,
		Write:      o.Write,
		Home:       home,
		HomeInside: homeInside,
		ReadOnly:   ro,
		ReadWrite:  rw,
		Protected:  protected,
		TmpBytes:   DefaultTmpSize,
		UID:        who.uid,
		GID:        who.gid,
		Limits:     o.Limits,
		Terminal:   o.Terminal,
		Rootless:   rootless,
		Cgroup:     cgroup,
	}
	if rootless && cgroup == "" {
		spec.Limits.CPUs = 0 // no rlimit for CPU bandwidth (see the note)
	}
	if who.uid == 0 || who.gid == 0 {
		// uid 0 owns root's files without any capability: hide those
		// only root may read, as file modes hide them from everyone else.
		// The walk (~2 ms) overlaps the rest of the setup; Run waits for
		// it before creating the sandbox.
		masks := make(chan []string, 1)
		go func() { masks <- sandbox.RootOnly("/etc") }()
		o.rootOnly = masks
	}
	spec.HostNetwork = o.HostNetwork
	spec.Landlock = t.landlock
	o.tiers = t
	if err := spec.Validate(); err != nil {
		cleanup()
		return nil, nop, err
	}
	if o.limitsNote != nil {
		writeLimitsNote(o.Log, o.limitsNote)
	}
	return spec, cleanup, nil
}

// homeDir returns the host directory behind $HOME, creating the persistent
// sbx home (owned by the invoking user) on first use.
func (o *Options) homeDir(who invoker, id, cwd string) (string, func(), error) {
	nop := func() {}
	switch o.Home {
	case HomeTmp:
		dir, err := os.MkdirTemp("", "sbx-home-"+id+"-")
		if err != nil {
			return "", nop, fmt.Errorf("create throwaway home: %w", err)
		}
		if err := os.Chown(dir, who.uid, who.gid); err != nil {
			os.RemoveAll(dir)
			return "", nop, fmt.Errorf("create throwaway home: %w", err)
		}
		return dir, func() { os.RemoveAll(dir) }, nil
	case "":
		base, ok := o.hostLookup("XDG_DATA_HOME")
		if _, sudo := o.hostLookup("SUDO_UID"); !ok || !filepath.IsAbs(base) || sudo {
			base = filepath.Join(who.home, ".local", "share")
		}
		dir := filepath.Join(base, "sbx", "home")
		if err := mkdirOwned(dir, who, 0o700); err != nil {
			return "", nop, fmt.Errorf("create sbx home %s: %w", dir, err)
		}
		return dir, nop, nil
	default:
		dir, err := resolvePath("--home", o.Home, cwd, false)
		if err != nil {
			return "", nop, err
		}
		return dir, nop, nil
	}
}

// mkdirOwned creates dir and its missing parents owned by who (so that a
// home created under sudo belongs to the user, not to root).
func mkdirOwned(dir string, who invoker, mode os.FileMode) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirOwned(parent, who, 0o755); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, mode); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return os.Chown(dir, who.uid, who.gid)
}

func newID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("make run id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// stagePaths copies host files named on the command line (pi's --extension,
// --session, ...) into the sandbox home and rewrites the arguments; see
// package stage. Files staged for another user than root are handed to them.
func stagePaths(spec *sandbox.Spec, o *Options, stateDir string) (*stage.Plan, error) {
	env := func(k string) string { v, _ := o.hostLookup(k); return v }
	plan, err := stage.Prepare(spec.Args, stage.Options{
		Cwd:               o.Cwd,
		HostHome:          o.who.home,
		Env:               env,
		SandboxHome:       spec.Home,
		SandboxHomeInside: spec.HomeInside,
		StateDir:          stateDir,
		RunID:             spec.ID,
		Warn:              o.Log,
	})
	if err != nil {
		return nil, fmt.Errorf("stage path arguments: %w", err)
	}
	if dir := plan.RunDir(); dir != "" && (spec.UID != 0 || spec.GID != 0) {
		err := filepath.WalkDir(filepath.Dir(dir), func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, spec.UID, spec.GID)
		})
		if err != nil {
			_ = plan.Finish()
			return nil, fmt.Errorf("stage path arguments: hand staged files to uid %d: %w", spec.UID, err)
		}
	}
	return plan, nil
}
