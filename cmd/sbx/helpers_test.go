package main

// Helpers of the integration tests: every test runs the real sbx binary
// (built once by TestMain) as a subprocess, in a fresh workspace, and checks
// after each run that the sandbox left nothing behind.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/internal/sbxtest"
	"github.com/sbx-sandbox/sbx/runner"
)

// stateRoot is sbx's state directory: root's default
// (runner.DefaultStateDir), or in the as-user mode the user's
// ($XDG_RUNTIME_DIR/sbx); one directory per live run under stateRoot/run,
// libcontainer's state under stateRoot/lc.
var stateRoot = "/run/sbx"

const (
	// cgroupRoot holds every cgroup hierarchy (v1 controllers and the
	// unified one on a hybrid host, or the single cgroup2 tree).
	cgroupRoot = "/sys/fs/cgroup"
	// runTimeout bounds every sbx run of the tests, so that a hung sandbox
	// fails its test instead of hanging the suite.
	runTimeout = 60 * time.Second
)

var (
	// sbxBin is the binary under test.
	sbxBin string
	// isRoot tells whether the tests can run at all.
	isRoot = os.Geteuid() == 0
	// runs attributes the run directories sbx creates to sbx processes.
	runs *runWatcher
	// killedRuns is set when a test had to kill a hung sbx.
	killedRuns atomic.Bool
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	// The tests mostly wait for subprocesses: unless told otherwise, run
	// more of them at once than the 2 cores of CI would allow by default.
	flag.Parse()
	parallelSet := false
	flag.Visit(func(f *flag.Flag) { parallelSet = parallelSet || f.Name == "test.parallel" })
	if !parallelSet {
		_ = flag.Set("test.parallel", strconv.Itoa(max(4, runtime.GOMAXPROCS(0))))
	}
	if !isRoot {
		// Every test skips with the reason; nothing to build.
		return m.Run()
	}
	if bin := os.Getenv("SBX_BIN"); bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			fmt.Fprintf(os.Stderr, "SBX_BIN %s: %v\n", bin, err)
			return 1
		}
		sbxBin = abs
	} else {
		bin, err := buildSbx("seccomp")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		sbxBin = bin
	}
	defer removeBuilds()
	defer removeTestUserBins()
	if name := os.Getenv(asUserEnv); name != "" {
		cleanup, err := setupAsUser(name)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s=%s: %v\n", asUserEnv, name, err)
			return 1
		}
		defer cleanup()
	}
	if !rootless() {
		// What sbx says once per boot (the file tier note on a host
		// without the BPF LSM tier) is said here, by the suite's first
		// root run, not in whichever test happens to run first;
		// TestFileTierNoteOnce checks the saying itself.
		warm := exec.Command(sbxBin, "run", "--home", "tmp", "--", "true")
		warm.Dir = os.TempDir()
		_ = warm.Run()
	}
	var err error
	runs, err = startRunWatcher(filepath.Join(stateRoot, "run"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "watch sbx run dirs: %v\n", err)
		return 1
	}
	code := m.Run()
	if killedRuns.Load() {
		// Some test killed a hung sbx: let one more run reclaim what it
		// left (the failure itself has been reported).
		reclaim := exec.Command(sbxBin, "run", "--home", "tmp", "--", "true")
		if rootless() {
			reclaim.Dir, reclaim.Env, reclaim.SysProcAttr = asUser.home, asUser.environ(), asUser.credential()
		}
		_ = reclaim.Run()
	}
	reclaimMu.Lock()
	defer reclaimMu.Unlock()
	if len(reclaimLog) > 0 && testing.Verbose() {
		// Only TestNoOrphansAfterSIGKILL should leave something to reclaim.
		fmt.Fprintf(os.Stderr, "runs that reclaimed sandboxes:\n  %s\n", strings.Join(reclaimLog, "\n  "))
	}
	return code
}

// builds are the binaries buildSbx made, by build tags.
var builds struct {
	sync.Mutex
	bins map[string]string
	dirs []string
}

// buildSbx builds this package's sbx with the build tags once per test
// binary (later calls return the same path) into a directory of its own
// that every user may search, so the rootless and as-user modes' user can
// run it too. removeBuilds, deferred by TestMain, removes them.
func buildSbx(tags string) (string, error) {
	builds.Lock()
	defer builds.Unlock()
	if bin, ok := builds.bins[tags]; ok {
		return bin, nil
	}
	dir, err := os.MkdirTemp("", "sbx-it-bin-")
	if err != nil {
		return "", fmt.Errorf("build sbx -tags %s: %w", tags, err)
	}
	builds.dirs = append(builds.dirs, dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		return "", fmt.Errorf("build sbx -tags %s: %w", tags, err)
	}
	bin := filepath.Join(dir, "sbx")
	if out, err := exec.Command("go", "build", "-tags", tags, "-o", bin, ".").CombinedOutput(); err != nil {
		return "", fmt.Errorf("build sbx -tags %s: %v\n%s", tags, err, out)
	}
	if builds.bins == nil {
		builds.bins = map[string]string{}
	}
	builds.bins[tags] = bin
	return bin, nil
}

// removeBuilds removes what buildSbx built.
func removeBuilds() {
	builds.Lock()
	defer builds.Unlock()
	for _, d := range builds.dirs {
		_ = os.RemoveAll(d)
	}
	builds.bins, builds.dirs = nil, nil
}

// requireRoot skips t when the tests run with -short or not as root (sbx
// run needs root for namespaces, cgroups and BPF): a failure where
// SBX_REQUIRE names root.
func requireRoot(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs real sandboxes; skipped with -short")
	}
	if !isRoot {
		sbxtest.Skip(t, sbxtest.Root, "sbx run needs root (namespaces, cgroups, BPF); run go test as root")
	}
}

// result is how one process ended.
type result struct {
	stdout, stderr string
	code           int
	elapsed        time.Duration
	// ids are the sandboxes this sbx process created.
	ids []string
	// notes is how many rlimit notes of a rootless run were taken out of
	// stderr (see checkLimitsNote).
	notes int
}

// String describes r for failure messages.
func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout: %q\nstderr: %q", r.code, r.stdout, r.stderr)
}

// box is one test's world: a fresh workspace and a fresh XDG_DATA_HOME (so
// the default sbx home of the runs lies in a temp dir, not in root's home).
type box struct {
	t    *testing.T
	ws   string // workspace and default cwd
	data string // XDG_DATA_HOME of sbx
	// user, when set (newUserBox), runs every process of the box as that
	// ordinary user, with runDir as its XDG_RUNTIME_DIR (so its state dir
	// is the box's own) and a user's fixed environment; the leftovers
	// check is then assertClean's. Otherwise the box runs as root, or as
	// the as-user mode's user (SBX_TEST_AS_USER) when that is on.
	user   *testUser
	runDir string
}

// newUserBox is a box whose processes run as u (see box.user): a
// workspace, a data home and a runtime dir owned by u, in directories u
// may search.
func newUserBox(t *testing.T, u *testUser) *box {
	t.Helper()
	b := &box{t: t, ws: t.TempDir(), data: t.TempDir(), runDir: t.TempDir(), user: u}
	for _, d := range []string{filepath.Dir(b.ws), filepath.Dir(b.data), filepath.Dir(b.runDir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{b.ws, b.data, b.runDir} {
		if err := os.Chown(d, u.uid, u.gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// stateDir is where sbx keeps the state of a user box's runs.
func (b *box) stateDir() string { return filepath.Join(b.runDir, "sbx") }

// assertClean checks that a user box's state dir holds no run, no
// libcontainer state and no staging manifest, and that no process of the
// sandbox is left (they would run in the box's workspace).
func (b *box) assertClean() {
	b.t.Helper()
	for _, sub := range []string{"run", "lc"} {
		entries, _ := os.ReadDir(filepath.Join(b.stateDir(), sub))
		for _, e := range entries {
			b.t.Errorf("left behind in the state dir: %s", filepath.Join(b.stateDir(), sub, e.Name()))
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cwd")
	for _, p := range procs {
		if cwd, err := os.Readlink(p); err == nil && (cwd == b.ws || strings.HasPrefix(cwd, b.ws+"/")) {
			b.t.Errorf("process %s outlived sbx (cwd %s)", filepath.Base(filepath.Dir(p)), cwd)
		}
	}
}

// newBox skips t unless root and marks it parallel.
func newBox(t *testing.T) *box {
	t.Helper()
	requireRoot(t)
	t.Parallel()
	return newSerialBox(t)
}

// newSerialBox is newBox for a test that must not run in parallel.
func newSerialBox(t *testing.T) *box {
	t.Helper()
	requireRoot(t)
	ws := t.TempDir()
	data := t.TempDir()
	// The workspace is reached by the program with the invoking user's
	// ids and no capabilities: make the temp dirs traversable.
	for _, d := range []string{filepath.Dir(ws), ws} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// In the as-user mode, the workspace and the data home are the
	// user's, as a user's project and ~/.local/share are.
	chownToUser(t, ws, data)
	return &box{t: t, ws: ws, data: data}
}

// sbxHome is the host directory behind $HOME of a run in the box's
// workspace with the default home: its workspace's own sbx home below
// dataHome ($XDG_DATA_HOME, or ~/.local/share).
func (b *box) sbxHome(dataHome string) string {
	ws, err := filepath.EvalSymlinks(b.ws)
	if err != nil {
		b.t.Fatal(err)
	}
	return filepath.Join(dataHome, "sbx", "homes", runner.WorkspaceHomeName(ws))
}

// in returns b for the subtest t (same workspace and data home), so that
// failures are reported on, and Fatal called from, the subtest.
func (b *box) in(t *testing.T) *box {
	c := *b
	c.t = t
	return &c
}

// opts change how a process is run.
type opts struct {
	dir        string    // working directory (default: the workspace)
	env        []string  // added to (and overriding) the environment
	stdin      io.Reader // default: /dev/null
	extraFiles []*os.File
	// timeout bounds the process (default runTimeout); past it the
	// process is killed and the test fails.
	timeout time.Duration
}

// environ returns the environment the test gives sbx: the test's own (in
// the as-user mode, the user's: see asUserMode.environ), without sudo's
// variables and with the box's XDG_DATA_HOME, changed by extra (NAME=VALUE
// sets, a bare NAME unsets).
func (b *box) environ(extra []string) []string {
	if b.user != nil {
		return append([]string{
			"PATH=/usr/local/bin:/usr/bin:/bin",
			"HOME=" + b.user.home,
			"USER=" + b.user.name,
			"LANG=C.UTF-8",
			"XDG_DATA_HOME=" + b.data,
			"XDG_RUNTIME_DIR=" + b.runDir,
		}, extra...)
	}
	drop := map[string]bool{"SUDO_UID": true, "SUDO_GID": true, "SUDO_USER": true, "SUDO_COMMAND": true, "XDG_DATA_HOME": true}
	var set []string
	for _, kv := range append([]string{"XDG_DATA_HOME=" + b.data}, extra...) {
		k, _, hasValue := strings.Cut(kv, "=")
		drop[k] = true
		if hasValue {
			set = append(set, kv)
		} else {
			// A bare NAME unsets NAME.
			set = slices.DeleteFunc(set, func(e string) bool { return strings.HasPrefix(e, k+"=") })
		}
	}
	base := os.Environ()
	if rootless() {
		base = asUser.environ()
	}
	var env []string
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if !drop[k] {
			env = append(env, kv)
		}
	}
	return append(env, set...)
}

// run runs "sbx run ARGS..." and checks the run left nothing behind.
func (b *box) run(args ...string) result {
	b.t.Helper()
	return b.sbx(opts{}, append([]string{"run"}, args...)...)
}

// runOpts is run with options.
func (b *box) runOpts(o opts, args ...string) result {
	b.t.Helper()
	return b.sbx(o, append([]string{"run"}, args...)...)
}

// sbx runs the sbx binary with args, waits for it, and checks that every
// sandbox it created is gone.
func (b *box) sbx(o opts, args ...string) result {
	b.t.Helper()
	p := b.start(o, args...)
	return p.wait()
}

// host runs name directly on the host (the control of a denial), with the
// same environment and working directory sbx would get.
func (b *box) host(o opts, name string, args ...string) result {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := b.command(ctx, o, name, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start), code: exitCode(err)}
	if ctx.Err() != nil {
		b.t.Fatalf("host %s %q did not end within %v", name, args, runTimeout)
	}
	if r.code < 0 {
		b.t.Fatalf("host %s %q: %v", name, args, err)
	}
	return r
}

// command returns name args as the box runs it: in the workspace (or
// o.dir), with the box's environment, o's stdin and extra files, and in
// the as-user mode as the user, in a session of its own.
func (b *box) command(ctx context.Context, o opts, name string, args ...string) *exec.Cmd {
	env := b.environ(o.env)
	path := name
	if rootless() || b.user != nil {
		// Found on the user's PATH, not the test's.
		path = lookPathIn(name, env)
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Args[0] = name
	cmd.Dir = b.ws
	if o.dir != "" {
		cmd.Dir = o.dir
	}
	cmd.Env = env
	cmd.Stdin = o.stdin
	cmd.ExtraFiles = o.extraFiles
	switch {
	case b.user != nil:
		cmd.SysProcAttr = b.user.credential()
	case rootless():
		cmd.SysProcAttr = asUser.credential()
	}
	return cmd
}

// lookPathIn finds name (without a slash) on the PATH of env, as a shell
// with that environment would; it returns name as it is when it has a
// slash or is not found there (exec then says why).
func lookPathIn(name string, env []string) string {
	if strings.Contains(name, "/") {
		return name
	}
	var path string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, d := range filepath.SplitList(path) {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return name
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		ws := ee.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
	return -1
}

// proc is a running sbx process. Its stdout is read line by line as it
// arrives.
type proc struct {
	b       *box
	cmd     *exec.Cmd
	cancel  context.CancelFunc
	start   time.Time
	lines   chan string
	mu      sync.Mutex
	out     bytes.Buffer
	errb    bytes.Buffer
	copied  chan struct{}
	ctx     context.Context
	timeout time.Duration
	// sbxRun is set when the process is (or wraps) an "sbx run": once it
	// has run the program, a sandbox must have been created.
	sbxRun bool
	// ownNoteCheck is set when the caller checks the rlimit note itself
	// (sbx exec, whose status is in its result; a pty, which merges
	// stderr into stdout).
	ownNoteCheck bool
}

// start starts the sbx binary with args.
func (b *box) start(o opts, args ...string) *proc {
	b.t.Helper()
	bin := sbxBin
	if b.user != nil {
		bin = b.user.bin
	}
	p := b.startCmd(o, bin, args...)
	p.sbxRun = runsProgram(args)
	p.ownNoteCheck = len(args) > 0 && args[0] == "exec"
	return p
}

// runsProgram tells whether sbx args ask it to run a program ("run", and
// no help flag among the flags before "--").
func runsProgram(args []string) bool {
	if len(args) == 0 || args[0] != "run" {
		return false
	}
	for _, a := range args[1:] {
		switch a {
		case "--":
			return true
		case "-h", "-help", "--help":
			return false
		}
	}
	return true
}

// startCmd starts name (sbx, or a wrapper such as script around it).
func (b *box) startCmd(o opts, name string, args ...string) *proc {
	b.t.Helper()
	timeout := o.timeout
	if timeout == 0 {
		timeout = runTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	cmd := b.command(ctx, o, name, args...)
	cmd.WaitDelay = 5 * time.Second
	p := &proc{b: b, cmd: cmd, cancel: cancel, lines: make(chan string, 1024), copied: make(chan struct{}), ctx: ctx, timeout: timeout}
	cmd.Stderr = lockedWriter{&p.mu, &p.errb}
	// Our own pipe rather than StdoutPipe: Wait closes that one as soon
	// as the process exits, possibly before its output has been read.
	stdout, w, err := os.Pipe()
	if err != nil {
		cancel()
		b.t.Fatal(err)
	}
	cmd.Stdout = w
	p.start = time.Now()
	err = cmd.Start()
	w.Close()
	if err != nil {
		stdout.Close()
		cancel()
		b.t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		defer stdout.Close()
		defer close(p.copied)
		defer close(p.lines)
		r := bufio.NewReader(stdout)
		for {
			line, err := r.ReadString('\n')
			p.mu.Lock()
			p.out.WriteString(line)
			p.mu.Unlock()
			if line != "" {
				select {
				case p.lines <- strings.TrimRight(line, "\r\n"):
				default:
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return p
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// waitLine waits until the program prints the line want.
func (p *proc) waitLine(want string) {
	p.b.t.Helper()
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				p.b.t.Fatalf("output ended before %q; got %q, stderr %q", want, p.stdout(), p.stderrText())
			}
			if line == want {
				return
			}
		case <-timer.C:
			p.b.t.Fatalf("no line %q within 30s; got %q, stderr %q", want, p.stdout(), p.stderrText())
		}
	}
}

func (p *proc) stdout() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func (p *proc) stderrText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.errb.String()
}

// signal sends sig to the sbx process itself.
func (p *proc) signal(sig syscall.Signal) {
	p.b.t.Helper()
	if sig == syscall.SIGKILL {
		killedRuns.Store(true)
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.b.t.Fatalf("signal sbx: %v", err)
	}
}

// exited reports whether the sbx process has exited (it is a zombie or
// gone); it does not reap it.
func (p *proc) exited() bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || len(s) < i+3 || s[i+2] == 'Z' || s[i+2] == 'X'
}

// wait waits for the process, then checks that every sandbox it created
// is gone from the host.
func (p *proc) wait() result {
	p.b.t.Helper()
	defer p.cancel()
	err := p.cmd.Wait()
	select {
	case <-p.copied:
	case <-time.After(5 * time.Second):
		// Something still holds the write end: a process that outlived
		// sbx.
		p.b.t.Errorf("%q: stdout still open 5s after exit: a process outlived sbx", p.cmd.Args)
	}
	r := result{stdout: p.stdout(), stderr: p.stderrText(), elapsed: time.Since(p.start), code: exitCode(err)}
	if p.ctx.Err() != nil {
		killedRuns.Store(true)
		p.b.t.Fatalf("%q did not end within %v (killed)\n%v", p.cmd.Args, p.timeout, r)
	}
	if r.code < 0 {
		p.b.t.Fatalf("%q: %v", p.cmd.Args, err)
	}
	if p.b.user != nil {
		// The box's own state dir, which the run watcher does not see.
		p.b.assertClean()
		return r
	}
	if rootless() {
		r.stderr, r.notes = dropLimitsNotes(r.stderr)
		if !p.ownNoteCheck {
			checkLimitsNote(p.b.t, p.cmd.Args, p.sbxRun, r.code, r.notes)
		}
	}
	if reclaimNote.MatchString(r.stderr) {
		noteReclaim(p.cmd.Args, r.stderr)
	}
	r.stderr = dropReclaimNotes(r.stderr)
	// A run that got as far as the program (any status but 125) must have
	// made a sandbox; a failed setup usually made none, so a short look
	// for one suffices.
	mustHave := p.sbxRun && r.code != exitSbxError
	look := 50 * time.Millisecond
	if mustHave {
		look = 2 * time.Second
	}
	ids, werr := runs.ids(p.cmd.Process.Pid, p.start, look)
	if werr != nil {
		p.b.t.Errorf("run watcher: %v", werr)
	}
	r.ids = ids
	if len(ids) == 0 && mustHave {
		p.b.t.Errorf("%q ran but no sandbox state dir was seen under %s/run: cannot check for leftovers", p.cmd.Args, stateRoot)
	}
	for _, id := range ids {
		assertNoLeftovers(p.b.t, id)
	}
	return r
}

// reclaimNote is what sbx prints when it cleans up after an sbx killed
// earlier (possibly by another test or another user of this machine).
var reclaimNote = regexp.MustCompile(`(?m)^sbx: cleaned up \d+ sandbox\(es\) left by a killed sbx\n`)

func dropReclaimNotes(s string) string { return reclaimNote.ReplaceAllString(s, "") }

var (
	reclaimMu  sync.Mutex
	reclaimLog []string
)

// noteReclaim records that a run of this test binary reclaimed sandboxes:
// with every sbx of the tests alive until its test ends, that means a
// live sandbox was taken for a dead one. Tests report it on failure.
func noteReclaim(args []string, stderr string) {
	reclaimMu.Lock()
	defer reclaimMu.Unlock()
	reclaimLog = append(reclaimLog, fmt.Sprintf("%s %q: %s", time.Now().Format("15:04:05.000"), args, strings.TrimSpace(stderr)))
}

// writeFile writes a file for a test, failing it on error.
func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// uniqueName returns a name no other test (or earlier run) uses.
func uniqueName(t *testing.T, prefix string) string {
	var b [6]byte
	f, err := os.Open("/dev/urandom")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := io.ReadFull(f, b[:]); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%s-%x", prefix, b)
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// lines splits output into lines without the trailing empty one.
func lines(s string) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
