// Package escape is sbx's adversarial suite: one test per escape class of
// the threat model (docs/security-model.md), each running a real attack
// inside `sbx run` and asserting the exact way it is refused, with a
// control that shows the same attack working on the host wherever that is
// safe.
//
// The attacks are steps of one static C helper (testdata/attack.c, built
// by TestMain with gcc -static) that prints "LABEL RESULT" per step and
// exits [escaped] when any step got through. Tests run sbx as root (it
// needs root); the sandboxed program then runs as uid 0 without
// capabilities, the strongest program sbx lets in.
//
// Run with `make escape` (go test -tags seccomp -count=1 ./escape/); set
// SBX_BIN to test a prebuilt binary.
package escape

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sbx-sandbox/sbx/internal/sbxtest"
)

// escaped is the helper's exit status when an attack got through.
const escaped = 66

// exitSbx is sbx's own failure status.
const exitSbx = 125

// runTimeout bounds one sbx run, so a hung sandbox fails its test.
const runTimeout = 60 * time.Second

var (
	sbxBin    string // the sbx binary under test
	attackBin string // the static attack helper (host path)
	// attack32Bin is its i386 build, unless attack32Err says why not.
	attack32Bin string
	attack32Err error
	isRoot      = os.Geteuid() == 0
)

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	if !isRoot {
		return m.Run() // every test skips with the reason
	}
	dir, err := os.MkdirTemp("", "sbx-escape-bin-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "create build dir: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if bin := os.Getenv("SBX_BIN"); bin != "" {
		if sbxBin, err = filepath.Abs(bin); err != nil {
			fmt.Fprintf(os.Stderr, "SBX_BIN %s: %v\n", bin, err)
			return 1
		}
	} else {
		sbxBin = filepath.Join(dir, "sbx")
		if err := build(exec.Command("go", "build", "-tags", "seccomp", "-o", sbxBin, "github.com/sbx-sandbox/sbx/cmd/sbx")); err != nil {
			fmt.Fprintf(os.Stderr, "build sbx: %v\n", err)
			return 1
		}
	}
	attackBin = filepath.Join(dir, "attack")
	cc := exec.Command("gcc", "-static", "-O2", "-Wall", "-Wextra", "-Werror", "-o", attackBin, "testdata/attack.c")
	if err := build(cc); err != nil {
		fmt.Fprintf(os.Stderr, "build testdata/attack.c (needs gcc and the static glibc of libc6-dev): %v\n", err)
		return 1
	}
	// The i386 build (gcc-multilib, as for bin/trysyscall32) tests the
	// compat ABI; TestSocketFamilies fails without it.
	attack32Bin = filepath.Join(dir, "attack32")
	cc32 := exec.Command("gcc", "-m32", "-static", "-O2", "-Wall", "-Wextra", "-Werror", "-o", attack32Bin, "testdata/attack.c")
	if out, err := cc32.CombinedOutput(); err != nil {
		attack32Err = fmt.Errorf("gcc -m32 testdata/attack.c (needs gcc-multilib): %v\n%s", err, out)
	}
	return m.Run()
}

func build(cmd *exec.Cmd) error {
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

// result is how one process ended.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// steps parses the helper's output into label -> result (the rest of the
// line after the label).
func (r result) steps() map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(strings.TrimRight(r.stdout, "\n"), "\n") {
		if label, res, ok := strings.Cut(strings.TrimRight(l, "\r"), " "); ok {
			m[label] = res
		}
	}
	return m
}

// box is one test's workspace, with the attack helper copied into it (an
// agent runs tools from its workspace too).
type box struct {
	t      *testing.T
	ws     string // workspace (and cwd)
	attack string // the helper inside the workspace
}

// newBox skips t unless root, marks it parallel and makes its workspace.
func newBox(t *testing.T) *box {
	t.Helper()
	if testing.Short() {
		t.Skip("runs real sandboxes; skipped with -short")
	}
	if !isRoot {
		sbxtest.Skip(t, sbxtest.Root, "sbx run needs root (namespaces, cgroups, BPF); run go test as root")
	}
	t.Parallel()
	return newSerialBox(t)
}

// newSerialBox is newBox for a test that must not run beside the others.
func newSerialBox(t *testing.T) *box {
	t.Helper()
	if testing.Short() {
		t.Skip("runs real sandboxes; skipped with -short")
	}
	if !isRoot {
		sbxtest.Skip(t, sbxtest.Root, "sbx run needs root (namespaces, cgroups, BPF); run go test as root")
	}
	ws := t.TempDir()
	// The program has no capabilities: make the path traversable.
	for _, d := range []string{filepath.Dir(ws), ws} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b := &box{t: t, ws: ws, attack: filepath.Join(ws, "attack")}
	copyFile(t, attackBin, b.attack, 0o755)
	return b
}

// in returns b for subtest t.
func (b *box) in(t *testing.T) *box {
	c := *b
	c.t = t
	return &c
}

// opts change how a process runs.
type opts struct {
	env        []string  // the whole environment (default: the test's)
	stdin      io.Reader // default: /dev/null
	stdout     io.Writer // default: captured
	stderr     *os.File  // default: captured
	extraFiles []*os.File
	sys        *syscall.SysProcAttr
	// started is called with the process once it runs.
	started func(p *os.Process)
}

// sbx runs "sbx run --home tmp FLAGS... -- CMD..." in the workspace and
// checks that the run left no sandbox behind.
func (b *box) sbx(o opts, flags []string, cmd ...string) result {
	b.t.Helper()
	args := append([]string{"run", "--home", "tmp"}, flags...)
	args = append(append(args, "--"), cmd...)
	r, pid := b.exec(o, sbxBin, args...)
	assertNoLeftovers(b.t, pid)
	return r
}

// attackIn runs the helper with steps inside sbx.
func (b *box) attackIn(flags []string, steps ...string) result {
	b.t.Helper()
	return b.sbx(opts{}, flags, append([]string{b.attack}, steps...)...)
}

// attackHost runs the helper with steps on the host (a control).
func (b *box) attackHost(o opts, steps ...string) result {
	b.t.Helper()
	r, _ := b.exec(o, b.attack, steps...)
	return r
}

// exec runs name in the workspace and returns its result and pid.
func (b *box) exec(o opts, name string, args ...string) (result, int) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = b.ws
	cmd.Env = o.env
	cmd.Stdin = o.stdin
	cmd.ExtraFiles = o.extraFiles
	cmd.SysProcAttr = o.sys
	// Output goes to files, not pipes: Wait then returns when the process
	// does, even if something it started (a sandbox that outlives a
	// killed sbx) still holds them.
	out, errf := tempFile(b.t), tempFile(b.t)
	if o.stderr != nil {
		errf = o.stderr
	}
	cmd.Stdout, cmd.Stderr = out, errf
	if o.stdout != nil {
		cmd.Stdout = o.stdout
	}
	if err := cmd.Start(); err != nil {
		b.t.Fatalf("start %s: %v", name, err)
	}
	if o.started != nil {
		o.started(cmd.Process)
	}
	err := cmd.Wait()
	r := result{stdout: readBack(b.t, out), stderr: readBack(b.t, errf), code: exitCode(err)}
	if ctx.Err() != nil {
		b.t.Fatalf("%s %.200q did not end within %v (killed)\n%v", name, args, runTimeout, r)
	}
	if r.code < 0 {
		b.t.Fatalf("%s %.200q: %v\n%v", name, args, err, r)
	}
	return r, cmd.Process.Pid
}

// tempFile is an unlinked temporary file, closed at the end of the test.
func tempFile(t *testing.T) *os.File {
	t.Helper()
	f, err := os.CreateTemp("", "sbx-escape-out-")
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(f.Name())
	t.Cleanup(func() { f.Close() })
	return f
}

func readBack(t *testing.T, f *os.File) string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func exitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		ws := ee.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	}
	return -1
}

// stateRun is where sbx keeps one directory per live run, with an owner
// record "PID START" of the sbx process (runner.DefaultStateDir + "/run").
const stateRun = "/run/sbx/run"

// assertNoLeftovers fails t if a run directory of the (exited) sbx process
// pid is still there: the sandbox was not torn down.
func assertNoLeftovers(t *testing.T, pid int) {
	t.Helper()
	dirs, _ := os.ReadDir(stateRun)
	for _, d := range dirs {
		data, err := os.ReadFile(filepath.Join(stateRun, d.Name(), "owner"))
		if err != nil {
			continue
		}
		if f := strings.Fields(string(data)); len(f) > 0 && f[0] == strconv.Itoa(pid) {
			t.Errorf("sbx (pid %d) exited but left its run %s behind", pid, d.Name())
		}
	}
}

// wantSteps checks that every label in want got exactly its result; a
// want of "A|B" accepts either (where the errno depends on how sbx lays
// out its mounts, not on whether the attack is refused).
func wantSteps(t *testing.T, what string, r result, want map[string]string) {
	t.Helper()
	got := r.steps()
	for label, res := range want {
		if !slices.Contains(strings.Split(res, "|"), got[label]) {
			t.Errorf("%s: %s = %q, want %q", what, label, got[label], res)
		}
	}
	if t.Failed() {
		t.Logf("%s: full result\n%v", what, r)
	}
}

// steps joins attack steps with the helper's ";" separator.
func steps(list ...[]string) []string {
	var out []string
	for i, s := range list {
		if i > 0 {
			out = append(out, ";")
		}
		out = append(out, s...)
	}
	return out
}

// step is one attack step.
func step(verb string, args ...string) []string { return append([]string{verb}, args...) }

func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, mode); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// unique returns a name no other test or run uses.
func unique(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), time.Now().UnixNano()%1e9)
}

// knownHole skips a test of a hole that docs/security-model.md lists as
// open, unless SBX_TEST_KNOWN_GAPS is set: the test stays, ready to prove
// the fix, and the suite stays green meanwhile.
func knownHole(t *testing.T, what string) {
	t.Helper()
	if os.Getenv("SBX_TEST_KNOWN_GAPS") == "" {
		t.Skip("open hole (docs/security-model.md): " + what + "; SBX_TEST_KNOWN_GAPS=1 runs this test")
	}
}
