package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/sbx-sandbox/sbx/home"
	"github.com/sbx-sandbox/sbx/hostfs"
	"github.com/sbx-sandbox/sbx/internal/runid"
	"github.com/sbx-sandbox/sbx/internal/safetext"
	"github.com/sbx-sandbox/sbx/invoker"
	"github.com/sbx-sandbox/sbx/netsvc"
	"github.com/sbx-sandbox/sbx/protect"
	"github.com/sbx-sandbox/sbx/report"

	"github.com/sbx-sandbox/sbx/bpf/netwall"
	"github.com/sbx-sandbox/sbx/egress"
	"github.com/sbx-sandbox/sbx/policysrc"
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
	// CopyBackErr is set when staged session files could not be copied
	// back to the host (see package stage); they stay in the sandbox home
	// and the next runs retry.
	CopyBackErr error
	// Violations are the run's denials (deduplicated, bounded; the ones
	// past the bound are counted in ViolationsDropped), as sbx exec
	// returns them.
	Violations        []report.Violation
	ViolationsDropped int
	// CleanupErr is set when teardown could not confirm the sandbox gone
	// (its processes killed, cgroups and state removed); Run then also
	// returns it wrapped in a [*CleanupError].
	CleanupErr error
	// Blocked are the protected entries the program created (a .pi,
	// .git, .envrc, ... that did not exist at the start), each moved
	// aside to NAME.sbx-blocked-ID once the sandbox was gone: the new
	// paths.
	Blocked []string
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
//
// A run is three steps: the options are resolved against the host into a
// plan (checked paths, the tier decision, the complete sandbox spec: see
// [Options.spec]); the plan's tiers are set up around the sandbox (see
// [tier]); Run waits for the program, then closes the tiers in reverse.
func Run(ctx context.Context, o Options) (res Result, retErr error) {
	start := time.Now()
	// Signals are caught from the start to the end of Run (stopped after
	// copy-back and teardown): one that arrives before the program starts
	// refuses the run cleanly (128+N, see pendingSignal); one after is the
	// program's. sbx is never killed half-way through setup or copy-back.
	sigs := make(chan os.Signal, 16)
	if o.ForwardSignals {
		signal.Notify(sigs, forwarded...)
		defer signal.Stop(sigs)
	}
	if err := o.fill(); err != nil {
		return res, err
	}
	if o.Terminal && (o.Stdin == nil || !term.IsTerminal(int(o.Stdin.Fd()))) {
		return res, errors.New("--tty: terminal mode needs a terminal on stdin")
	}
	// Every host path is resolved and checked before anything is written
	// to disk: bad input that could widen access changes nothing. The
	// paths stay open until the run ends (see mountsrc.go).
	defer o.releaseHeld()
	if err := o.resolvePaths(); err != nil {
		return res, err
	}
	if Rootless() {
		if err := privateDir(o.StateDir); err != nil {
			return res, err
		}
	}
	o.housekeeping()
	spec, cleanup, err := o.spec()
	if err != nil {
		return res, err
	}
	res.ID = spec.ID
	// Before the sandbox exists: what it may write is registered, so that
	// a later run does not widen its policy from a file this one wrote
	// (package policysrc). The grant ends after copy-back (deferred
	// before the run's own teardown, so it runs after it).
	endGrants, err := policysrc.Record(o.StateDir, grantedRoots(spec, o.rw))
	if err != nil {
		cleanup()
		return res, err
	}
	defer endGrants()
	staged, err := stagePaths(spec, &o, stage.StateDir(o.StateDir))
	if err != nil {
		cleanup()
		return res, err
	}
	r := &run{o: &o, spec: spec, res: &res, rep: report.New(o.Log, o.Violations)}
	if o.DenialsInResult {
		r.rep = report.New(nil, o.Violations)
	}
	r.rep.Silent = o.Quiet
	r.rep.Allow = o.allow
	for _, h := range spec.Hidden {
		r.rep.Masks = append(r.rep.Masks, h.Path)
	}
	r.plan(cleanup, staged)
	r.ready = 4 // home, the copy-backs and the report are set up by now
	defer func() {
		r.closeAll()
		if res.CleanupErr != nil && retErr == nil {
			retErr = &CleanupError{Err: res.CleanupErr}
		}
	}()
	if err := o.complete(spec, staged); err != nil {
		return res, err
	}
	if err := home.MakeMountPoints(o.cred, spec); err != nil {
		return res, err
	}
	if err := r.prepareAll(); err != nil {
		return res, err
	}
	if sig := pendingSignal(sigs); sig != 0 {
		return o.refusedBy(res, sig), nil
	}
	if err := r.create(); err != nil {
		return res, err
	}
	if err := r.attachAll(); err != nil {
		return res, err
	}
	if sig := pendingSignal(sigs); sig != 0 {
		return o.refusedBy(res, sig), nil // closing the sandbox ends the shim
	}
	// From here on the program may have run (whatever Exec returns):
	// what it created is looked for at the end (createdPart).
	r.execed = true
	if err := r.sb.Exec(); err != nil {
		return res, err
	}
	if err := r.startedAll(); err != nil {
		return res, err
	}
	if err := r.wait(ctx, sigs); err != nil {
		return res, err
	}
	res.Duration = time.Since(start)
	return res, nil
}

// grantedRoots are the host trees a run's sandbox may write: the
// workspace with --write, the --rw paths and the home. A file among the
// --rw paths is copied back by a rename over it (a new inode), so its
// directory is granted with it.
func grantedRoots(spec *sandbox.Spec, rw []string) []string {
	out := slices.Clone(rw)
	for _, p := range rw {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			out = append(out, filepath.Dir(p))
		}
	}
	if spec.Write {
		out = append(out, spec.Workspace)
	}
	return append(out, spec.Home)
}

// housekeeping cleans up after killed runs: their sandboxes, throwaway
// homes (also of runs killed before their sandbox existed) and staged
// files.
func (o *Options) housekeeping() {
	if ids, err := sandbox.Reclaim(sandbox.Dirs{Root: o.StateDir}); err != nil {
		fmt.Fprintf(o.Log, "sbx: warning: cleaning up after an earlier run: %v\n", err)
	} else if len(ids) > 0 {
		fmt.Fprintf(o.Log, "sbx: cleaned up %d sandbox(es) left by a killed sbx\n", len(ids))
	}
	home.SweepTmp(o.StateDir)
	// Staging names files a sandbox wrote: its lines are escaped.
	if err := stage.Recover(stage.StateDir(o.StateDir), safetext.LineWriter(o.Log)); err != nil {
		fmt.Fprintf(o.Log, "sbx: warning: recovering staged files of an earlier run: %s\n", safetext.Escape(err.Error()))
	}
	home.SweepRunDirs(o.StateDir, o.Log) // after Recover has copied back from them
}

// complete fills in the rest of the spec, before the sandbox is created
// from it (which validates it, once) and never after: the staged
// arguments, the network's settings, what the tiers need of the shim, and
// root's hidden files.
func (o *Options) complete(spec *sandbox.Spec, staged *stage.Plan) error {
	if staged != nil {
		spec.Args = staged.Argv()
	}
	if !spec.Rootless {
		spec.AllowInetSockets = true // the wall denies them, and reports it
		spec.Shim.AwaitLSM = o.tiers.bpfLSM
	}
	spec.Shim.NetCanary = o.netCanary(spec.Rootless)
	if !o.hostNetwork() {
		rc, err := netsvc.ResolvConf(o.StateDir)
		if err != nil {
			return err
		}
		spec.ResolvConf = rc
	}
	if len(o.allow) > 0 {
		spec.ProxyPort = netsvc.ProxyAddr.Port()
		// Rootless --net none: the proxy needs inet sockets; Landlock
		// lets TCP connect only to its port, and the namespace is empty.
		spec.AllowInetSockets = true
	}
	if o.rootOnly != nil {
		spec.Masked = append(spec.Masked, <-o.rootOnly...)
	}
	return nil
}

// wait waits for the program, passing signals on, and fills in r.res.
func (r *run) wait(ctx context.Context, sigs chan os.Signal) error {
	o, sb, res := r.o, r.sb, r.res
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
	var (
		shimReady bool             // the shim has started the program
		held      []os.Signal      // signals waiting for that
		poll      <-chan time.Time // while some are held
		grace     <-chan time.Time // after a stop signal: the time to end
		stopSig   os.Signal        // that signal
		killed    bool             // sbx killed the sandbox itself
		timers    []interface{ Stop() bool }
	)
	defer func() {
		for _, t := range timers {
			t.Stop()
		}
	}()
	var timeout <-chan time.Time
	if o.Timeout > 0 {
		t := time.NewTimer(o.Timeout)
		timers = append(timers, t)
		timeout = t.C
	}
	for {
		select {
		case code := <-waited:
			if sig := sb.ShimSignal(); sig != 0 && !killed && !res.TimedOut && !res.Cancelled && !sb.OOMKilled() {
				fmt.Fprintf(o.Log, "sbx: the sandbox's PID 1 (sbx's shim) was killed by %s from outside sbx: the program's own status is lost\n", unix.SignalName(sig))
			}
			res.ExitCode = code
			if code == sandbox.ExitNotFound && o.notFound != "" {
				fmt.Fprint(o.Log, o.notFound)
			}
			if res.TimedOut {
				res.ExitCode = ExitTimeout
			}
			res.OOM = sb.OOMKilled()
			if r.copied != nil {
				// The pty has the program's last output; drain it.
				select {
				case <-r.copied:
				case <-time.After(2 * time.Second):
				}
			}
			return nil
		case err := <-waitErr:
			return err
		case s := <-sigs:
			if s == unix.SIGWINCH && r.term != nil {
				r.term.resize()
				continue
			}
			if !shimReady && !hasChild(sb.Pid()) {
				// The shim (a Go program) has not got its signal handler
				// yet: a signal now would make its runtime exit 2, or be
				// ignored by PID 1. Hold it until the program runs.
				held = append(held, s)
				if poll == nil {
					t := time.NewTicker(2 * time.Millisecond)
					timers = append(timers, tickerStop{t})
					poll = t.C
				}
				continue
			}
			shimReady = true
			_ = sb.Signal(s)
			if grace == nil && stops(s) {
				t := time.NewTimer(StopGrace)
				timers = append(timers, t)
				grace, stopSig = t.C, s
			}
		case <-grace:
			// The program ignores the signal, or the shim cannot pass it
			// on (stopped, say): end it as docker stop does.
			fmt.Fprintf(o.Log, "sbx: the sandbox did not end within %v of %s: killed it\n", StopGrace, unix.SignalName(stopSig.(unix.Signal)))
			killed, grace = true, nil
			_ = sb.Kill()
		case <-poll:
			if hasChild(sb.Pid()) {
				shimReady, poll = true, nil
				for _, s := range held {
					_ = sb.Signal(s)
				}
				held = nil
			}
		case <-timeout:
			res.TimedOut, killed = true, true
			_ = sb.Kill()
		case <-ctx.Done():
			res.Cancelled, killed = true, true
			_ = sb.Kill()
			ctx = context.Background() // fire once
		}
	}
}

// tickerStop gives a ticker the Stop of a timer.
type tickerStop struct{ t *time.Ticker }

func (s tickerStop) Stop() bool { s.t.Stop(); return true }

// StopGrace is how long a sandbox has to end after sbx passed it a stop
// signal (INT, TERM, HUP, QUIT) before sbx kills it.
const StopGrace = 10 * time.Second

// stops reports whether s asks the program to end.
func stops(s os.Signal) bool {
	return s == unix.SIGINT || s == unix.SIGTERM || s == unix.SIGHUP || s == unix.SIGQUIT
}

// hasChild reports whether the process pid (the shim, whose main thread
// starts the program after it has installed its signal handling) has a
// child yet. Without /proc/PID/task/PID/children (CONFIG_PROC_CHILDREN) it
// answers true: signals are then forwarded at once, as before.
func hasChild(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist) || !procChildren()
	}
	return len(strings.TrimSpace(string(data))) > 0
}

// procChildren reports whether this kernel has /proc/PID/task/TID/children.
func procChildren() bool {
	_, err := os.Stat(fmt.Sprintf("/proc/self/task/%d/children", os.Getpid()))
	return err == nil
}

// pendingSignal returns a signal received and not yet handled (SIGWINCH
// aside), or 0.
func pendingSignal(sigs chan os.Signal) unix.Signal {
	for {
		select {
		case s := <-sigs:
			if s != unix.SIGWINCH {
				return s.(unix.Signal)
			}
		default:
			return 0
		}
	}
}

// refusedBy is the result of a run that a signal stopped before the
// program started: nothing ran, status 128+N as if the program had died of
// it.
func (o *Options) refusedBy(res Result, sig unix.Signal) Result {
	fmt.Fprintf(o.Log, "sbx: %s before the program started: nothing was run\n", unix.SignalName(sig))
	res.ExitCode = 128 + int(sig)
	res.Cancelled = true
	return res
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
	o.allow = allow.WithLocalhost()
	return o.parsePublish()
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
	who, cwd, ws, ro, rw := o.who, o.Cwd, o.ws, o.ro, o.rw
	id, err := runid.New()
	if err != nil {
		return nil, nop, err
	}
	homeInside := who.Home
	if homeInside == "" || homeInside == "/" || !filepath.IsAbs(homeInside) {
		homeInside = "/home/sbx"
	}
	env, err := cleanEnv(o, who, homeInside)
	if err != nil {
		return nil, nop, err
	}
	env, ro = o.discover(env, ro)
	for _, kv := range env {
		if !utf8.ValidString(kv) {
			name, _, _ := strings.Cut(kv, "=")
			return nil, nop, fmt.Errorf("environment variable %s is not valid UTF-8: sbx cannot pass it into the sandbox unchanged", name)
		}
	}
	// Every check that can refuse the run comes before the first thing
	// written to disk (the home).
	t, err := selectTiers(o.Policy, o.StateDir)
	if err != nil {
		return nil, nop, err
	}
	var cgroup string
	if rootless {
		deleg, derr := sandbox.HostDelegation()
		if cgroup, err = rootlessLimits(o, id, deleg, derr); err != nil {
			return nil, nop, err
		}
	}
	// The searches of the writable trees (protected entries, git's
	// pointers, --protect and --mask paths) read what the sandbox can
	// write: with the invoking user's rights, like every other host file
	// operation on such paths.
	var (
		prot   protect.Protection
		hidden []sandbox.Hidden
	)
	err = o.cred.Do(func() error {
		var err error
		m := protect.Mounts{WS: ws, Write: o.Write, RO: ro, RW: rw}
		o.walked = m
		if prot, err = m.Run(o.policyRW, o.who.Home); err != nil {
			return err
		}
		if err := o.mounts().Extra(&prot, o.protects); err != nil {
			return err
		}
		hidden, err = o.mounts().Hidden(o.masks, o.protects)
		return err
	})
	if err != nil {
		return nil, nop, err
	}
	protect.DropMasked(&prot, hidden)
	sbxHome, homeCleanup, err := o.homeDir(who, id, ws)
	if err != nil {
		return nil, nop, err
	}
	rd, err := home.NewRunDir(o.StateDir, id, o.cred)
	if err != nil {
		homeCleanup()
		return nil, nop, err
	}
	o.runDir = rd
	cleanup := func() {
		rd.Remove(stage.StateDir(o.StateDir))
		homeCleanup()
	}
	var hiddenFile string
	if slices.ContainsFunc(hidden, func(h sandbox.Hidden) bool { return !h.Dir }) {
		if hiddenFile, err = protect.MaskFile(o.StateDir); err != nil {
			cleanup()
			return nil, nop, err
		}
	}
	rwScope := home.RWScope{WS: ws, Write: o.Write, RO: o.ro, RW: o.rw, UserHome: o.who.Home, Cred: o.cred, Log: o.Log}
	rw, rwCopies := rwScope.SplitRWFiles(rw)
	var runBinds []sandbox.Bind
	if o.rwCopies, runBinds, err = rwScope.CopyInRW(rwCopies, rd, sbxHome, homeInside); err != nil {
		cleanup()
		return nil, nop, err
	}
	wd := ws
	if hostfs.Under(cwd, ws) {
		wd = cwd
	}
	spec := &sandbox.Spec{
		ID:         id,
		Args:       o.Args,
		Env:        env,
		Cwd:        wd,
		Workspace:  ws,
		Write:      o.Write,
		Home:       sbxHome,
		HomeInside: homeInside,
		ReadOnly:   ro,
		ReadWrite:  rw,
		RunBinds:   runBinds,
		Protected:  prot.ReadOnly,
		Pinned:     prot.Pinned,
		TmpBytes:   DefaultTmpSize,
		UID:        who.UID,
		GID:        who.GID,
		Limits:     o.Limits,
		Terminal:   o.Terminal,
		Umask:      callerUmask(),
		Rootless:   rootless,
		Cgroup:     cgroup,
		Hidden:     hidden,
		HiddenFile: hiddenFile,
	}
	if rootless && cgroup == "" {
		spec.Limits.CPUs = 0 // no rlimit for CPU bandwidth (see the note)
	}
	if who.UID == 0 || who.GID == 0 {
		// uid 0 owns root's files without any capability: hide those
		// only root may read, as file modes hide them from everyone else.
		// The walk (~2 ms) overlaps the rest of the setup; Run waits for
		// it before creating the sandbox.
		masks := make(chan []string, 1)
		go func() { masks <- sandbox.RootOnly("/etc") }()
		o.rootOnly = masks
	}
	if !rootless {
		// The network wall of this build walls in exactly the runs
		// under its parent cgroup (see openNetWall).
		spec.WallGroup = netwall.WallID()
	}
	spec.HostNetwork = o.hostNetwork()
	spec.Loopback = o.loopback()
	spec.Landlock = t.landlock
	o.tiers = t
	o.protect = prot
	if o.limitsNote != nil {
		writeLimitsNote(o.Log, o.limitsNote, o.StateDir)
	}
	if t.lsmMissing != nil && t.landlock {
		writeFileTierNote(o.Log, t.lsmMissing, o.StateDir)
	}
	if o.discoverNote != "" {
		io.WriteString(o.Log, o.discoverNote)
	}
	if o.forOwner {
		fmt.Fprintf(o.Log, "sbx: running the program as %s (uid %d), the owner of the workspace, not as root\n", who.Name, who.UID)
	}
	if rootless && os.Geteuid() == 0 {
		fmt.Fprintln(o.Log, "sbx: root without CAP_SYS_ADMIN (in a container?): running rootless, in a user namespace with Landlock and seccomp, without the BPF tiers (sbx doctor says what applies)")
	}
	return spec, cleanup, nil
}

// homeDir returns the host directory behind $HOME, creating it as the
// invoking user (hostfs.Cred) when it is sbx's own: by default a home of
// the workspace's own, ${XDG_DATA_HOME:-~/.local/share}/sbx/homes/<name>-
// <hash>, so that what one run plants in its home (a ~/.gitconfig, a .pth)
// never runs in a run for another workspace; or a throwaway one. An
// explicit --home was resolved and checked by resolvePaths.
func (o *Options) homeDir(who invoker.User, id, ws string) (string, func(), error) {
	nop := func() {}
	switch o.Home {
	case HomeTmp:
		lock, err := home.RegisterTmp(o.StateDir, id)
		if err != nil {
			return "", nop, err
		}
		var dir string
		err = o.cred.Do(func() error {
			var err error
			dir, err = os.MkdirTemp("", home.TmpPrefix+id+"-")
			return err
		})
		if err != nil {
			lock.Close()
			os.Remove(home.TmpLock(o.StateDir, id))
			return "", nop, fmt.Errorf("create throwaway home: %w", err)
		}
		return dir, func() {
			// Kept while a failed copy-back still needs it (its retry
			// removes it with the run's staging dir).
			if !stage.Pending(stage.StateDir(o.StateDir), dir) {
				_ = home.RemoveAsUser(o.cred, dir)
				os.Remove(home.TmpLock(o.StateDir, id)) // lock.Name() is its temporary name
			}
			lock.Close()
		}, nil
	case "":
		base := filepath.Join(o.dataHome(who), "sbx")
		dir := filepath.Join(base, "homes", WorkspaceHomeName(ws))
		created, err := mkdirAsUser(o.cred, who, dir)
		if err != nil {
			return "", nop, fmt.Errorf("create sbx home %s: %w", dir, err)
		}
		home.Repair(dir, who, o.cred, o.StateDir, o.Log)
		if old := filepath.Join(base, "home"); created {
			if fi, err := os.Lstat(old); err == nil && fi.IsDir() {
				fmt.Fprintf(o.Log, "sbx: this workspace has a home of its own now, %s; the home earlier sbx versions shared between all workspaces, %s, is no longer used (--home %s keeps using it)\n", dir, old, old)
			}
		}
		return dir, nop, nil
	default:
		return o.home, nop, nil
	}
}

// dataHome is ${XDG_DATA_HOME:-~/.local/share} of the invoking user (under
// sudo always the user's ~/.local/share: root's environment is not theirs).
func (o *Options) dataHome(who invoker.User) string {
	base, ok := o.hostLookup("XDG_DATA_HOME")
	if _, sudo := o.hostLookup("SUDO_UID"); !ok || !filepath.IsAbs(base) || sudo || o.forOwner {
		base = filepath.Join(who.Home, ".local", "share")
	}
	return base
}

// WorkspaceHomeName is the directory name of workspace ws's sbx home: its
// base name (letters, digits, '.', '_', '-'; at most 32) and 12 hex digits
// of the SHA-256 of its path, so that two workspaces never share one.
func WorkspaceHomeName(ws string) string {
	sum := sha256.Sum256([]byte(ws))
	name := []rune{}
	for _, r := range filepath.Base(ws) {
		if len(name) == 32 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			name = append(name, r)
		default:
			name = append(name, '_')
		}
	}
	n := strings.TrimLeft(string(name), ".")
	if n == "" {
		n = "root"
	}
	return n + "-" + hex.EncodeToString(sum[:6])
}

// mkdirAsUser creates dir and its missing parents as the user (so that
// under sudo they belong to the user and are made only where the user may
// write), then checks that dir is a real directory of the user's. It
// reports whether dir itself was created.
func mkdirAsUser(c hostfs.Cred, who invoker.User, dir string) (bool, error) {
	created := false
	err := c.Do(func() error {
		if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
			created = true
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		d, err := hostfs.OpenDir(dir, nil)
		if err != nil {
			return err
		}
		defer d.Close()
		fi, err := d.Stat()
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != who.UID {
			return fmt.Errorf("owned by uid %d, not by uid %d", st.Uid, who.UID)
		}
		return nil
	})
	return created, err
}

// stagePaths copies host files named on the command line (pi's --extension,
// --session, ...) into the run dir, bound at <home>/.sbx-staging/<id> for
// this run alone, and rewrites the arguments; see package stage. It runs with the invoking user's identity, so what it
// creates is the user's and what it reads is what the user may read.
func stagePaths(spec *sandbox.Spec, o *Options, stateDir string) (*stage.Plan, error) {
	if o.NoStage {
		return nil, nil
	}
	env := func(k string) string { v, _ := o.hostLookup(k); return v }
	plan, err := stage.Prepare(spec.Args, stage.Options{
		Cwd:               o.Cwd,
		HostHome:          o.who.Home,
		Env:               env,
		SandboxHome:       spec.Home,
		SandboxHomeInside: spec.HomeInside,
		RunDir:            o.runDir.Sub(home.RunStageDir),
		StateDir:          stateDir,
		RunID:             spec.ID,
		Warn:              safetext.LineWriter(o.Log), // names the sandbox wrote or the argv chose
		Writable:          append([]string{spec.Workspace, spec.Home}, spec.ReadWrite...),
		Throwaway:         o.Home == HomeTmp,
		Cred:              o.cred,
	})
	if err != nil {
		return nil, fmt.Errorf("stage path arguments: %w", err)
	}
	if d := plan.RunDir(); d != "" {
		// Shown at its place in the home to this run alone.
		spec.RunBinds = append(spec.RunBinds, sandbox.Bind{Source: d, Destination: plan.Inside(), Writable: true})
	}
	return plan, nil
}
